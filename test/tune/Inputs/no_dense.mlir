// A model without dense layers (a per-element scale fitted by mean squared
// error): het-tune kernels has nothing to measure in it.
func.func @scale(%x: tensor<16x4xf32>, %t: tensor<16x4xf32>,
                 %w: tensor<16x4xf32> {het.param}) -> tensor<f32> {
  %y = het.mul %x, %w : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  %d = het.sub %y, %t : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  %s = het.mul %d, %d : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  %l = het.reduce_mean %s {axes = array<i64: 0, 1>} : tensor<16x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
