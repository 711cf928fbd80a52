// Pooling between oneDNN calls on channel-blocked activations: overlapping,
// padded 3x3 windows (stride 2) from one convolution to the next, then 2x2
// pooling whose output the generated code flattens (blocked in, row-major
// out), with BN+ReLU fused by het-compile.
func.func @pools(%x: tensor<4x3x12x12xf32>, %labels: tensor<4xi64>,
                 %k1: tensor<16x3x3x3xf32> {het.param}, %g1: tensor<16xf32> {het.param},
                 %c1: tensor<16xf32> {het.param}, %k2: tensor<16x16x3x3xf32> {het.param},
                 %g2: tensor<16xf32> {het.param}, %c2: tensor<16xf32> {het.param},
                 %w: tensor<5x144xf32> {het.param}, %b: tensor<5xf32> {het.param}) -> tensor<f32> {
  %y1 = het.conv2d %x, %k1 {padding = array<i64: 1, 1>, het.layer = 0 : i64}
      : tensor<4x3x12x12xf32>, tensor<16x3x3x3xf32> -> tensor<4x16x12x12xf32>
  %n1, %m1, %s1 = het.batch_norm %y1, %g1, %c1 {het.layer = 0 : i64}
      : tensor<4x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>
     -> tensor<4x16x12x12xf32>, tensor<16xf32>, tensor<16xf32>
  %r1 = het.relu %n1 {het.layer = 0 : i64} : tensor<4x16x12x12xf32>
  %p1 = het.max_pool2d %r1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                            padding = array<i64: 1, 1>, het.layer = 0 : i64}
      : tensor<4x16x12x12xf32> -> tensor<4x16x6x6xf32>
  %y2 = het.conv2d %p1, %k2 {padding = array<i64: 1, 1>, het.layer = 1 : i64}
      : tensor<4x16x6x6xf32>, tensor<16x16x3x3xf32> -> tensor<4x16x6x6xf32>
  %n2, %m2, %s2 = het.batch_norm %y2, %g2, %c2 {het.layer = 1 : i64}
      : tensor<4x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
     -> tensor<4x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>
  %r2 = het.relu %n2 {het.layer = 1 : i64} : tensor<4x16x6x6xf32>
  %p2 = het.max_pool2d %r2 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, het.layer = 1 : i64}
      : tensor<4x16x6x6xf32> -> tensor<4x16x3x3xf32>
  %flat = het.reshape %p2 {het.layer = 2 : i64} : tensor<4x16x3x3xf32> -> tensor<4x144xf32>
  %logits = het.linear %flat, %w, %b {het.layer = 2 : i64}
      : tensor<4x144xf32>, tensor<5x144xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64}
      : tensor<4x5xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
