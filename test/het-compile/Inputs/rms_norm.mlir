// Two RMS norms in one step: one over a [2, 4, 8] activation (its scale
// gradient sums over both leading axes), one with a non-default epsilon
// whose input also feeds a residual add (two gradients reach it).
func.func @rms(%x: tensor<2x4x6xf32>, %labels: tensor<2x4xi64>, %w: tensor<8x6xf32> {het.param},
               %g: tensor<8xf32> {het.param}, %g2: tensor<8xf32> {het.param},
               %v: tensor<5x8xf32> {het.param}) -> tensor<f32> {
  %h = het.linear %x, %w : tensor<2x4x6xf32>, tensor<8x6xf32> -> tensor<2x4x8xf32>
  %n, %r = het.rms_norm %h, %g : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<2x4xf32>
  %a = het.gelu %n : tensor<2x4x8xf32>
  %res = het.add %a, %h : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %n2, %r2 = het.rms_norm %res, %g2 {epsilon = 1.0e-5 : f64}
      : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>, tensor<2x4xf32>
  %logits = het.linear %n2, %v : tensor<2x4x8xf32>, tensor<5x8xf32> -> tensor<2x4x5xf32>
  %loss = het.cross_entropy %logits, %labels : tensor<2x4x5xf32>, tensor<2x4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
