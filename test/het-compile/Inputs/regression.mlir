// A regression model: mean squared error, no cross-entropy, so no predict.
func.func @reg(%x: tensor<16x8xf32>, %t: tensor<16x4xf32>,
               %w: tensor<4x8xf32> {het.param}, %b: tensor<4xf32> {het.param}) -> tensor<f32> {
  %y = het.linear %x, %w, %b : tensor<16x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<16x4xf32>
  %d = het.sub %y, %t : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  %s = het.mul %d, %d : tensor<16x4xf32>, tensor<16x4xf32> -> tensor<16x4xf32>
  %l = het.reduce_mean %s {axes = array<i64: 0, 1>} : tensor<16x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
