// Exercises every kernel library=mlir generates, in shapes the example
// models do not reach: a strided, padded, dilated convolution with bias
// after a plain one (so its input gradient is computed too), a batched
// matmul with transpose_rhs, a transpose_lhs matmul against a plain matrix
// shared by the batch, one with both flags (their gradients are matmuls
// with the other flag combinations), and a linear layer with a fused exact
// GELU (het-fuse) followed by one without bias.
func.func @kern(%x: tensor<2x3x9x9xf32>, %labels: tensor<2xi64>,
                %k1: tensor<4x3x3x3xf32> {het.param},
                %k2: tensor<4x4x3x3xf32> {het.param}, %kb: tensor<4xf32> {het.param},
                %q: tensor<2x8x16xf32> {het.param}, %p: tensor<4x6xf32> {het.param},
                %v: tensor<2x5x8xf32> {het.param},
                %w1: tensor<12x30xf32> {het.param}, %b1: tensor<12xf32> {het.param},
                %w2: tensor<10x12xf32> {het.param}) -> tensor<f32> {
  %y1 = het.conv2d %x, %k1 {padding = array<i64: 1, 1>}
      : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x9x9xf32>
  // OH = (9 + 2*1 - 2*(3-1) - 1) / 2 + 1 = 4
  %y = het.conv2d %y1, %k2, %kb {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>,
                                 dilation = array<i64: 2, 2>}
      : tensor<2x4x9x9xf32>, tensor<4x4x3x3xf32>, tensor<4xf32> -> tensor<2x4x4x4xf32>
  %r = het.reshape %y : tensor<2x4x4x4xf32> -> tensor<2x4x16xf32>
  %s = het.matmul %r, %q {transpose_rhs}
      : tensor<2x4x16xf32>, tensor<2x8x16xf32> -> tensor<2x4x8xf32>
  %t = het.matmul %s, %p {transpose_lhs}
      : tensor<2x4x8xf32>, tensor<4x6xf32> -> tensor<2x8x6xf32>
  %u = het.matmul %t, %v {transpose_lhs, transpose_rhs}
      : tensor<2x8x6xf32>, tensor<2x5x8xf32> -> tensor<2x6x5xf32>
  %f = het.reshape %u : tensor<2x6x5xf32> -> tensor<2x30xf32>
  %h = het.linear %f, %w1, %b1 : tensor<2x30xf32>, tensor<12x30xf32>, tensor<12xf32> -> tensor<2x12xf32>
  %g = het.gelu %h : tensor<2x12xf32>
  %logits = het.linear %g, %w2 : tensor<2x12xf32>, tensor<10x12xf32> -> tensor<2x10xf32>
  %loss = het.cross_entropy %logits, %labels : tensor<2x10xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
