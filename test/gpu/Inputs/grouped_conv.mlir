// A depthwise-style convolution (two groups) before a linear head: NVIDIA
// builds call cuDNN for it; AMD builds have no GPU lowering for grouped
// convolutions yet (test/gpu/errors.test).
func.func @grouped(%x: tensor<4x4x8x8xf32>, %labels: tensor<4xi64>,
                   %k: tensor<4x2x3x3xf32> {het.param},
                   %w: tensor<10x256xf32> {het.param}, %b: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %y = het.conv2d %x, %k {padding = array<i64: 1, 1>, groups = 2 : i64, het.layer = 0 : i64}
      : tensor<4x4x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<4x4x8x8xf32>
  %r = het.relu %y {het.layer = 0 : i64} : tensor<4x4x8x8xf32>
  %flat = het.reshape %r {het.layer = 1 : i64} : tensor<4x4x8x8xf32> -> tensor<4x256xf32>
  %logits = het.linear %flat, %w, %b {het.layer = 1 : i64}
      : tensor<4x256xf32>, tensor<10x256xf32>, tensor<10xf32> -> tensor<4x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 1 : i64}
      : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
