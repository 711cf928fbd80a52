// A model as het.from_torch writes one: a value computed at import time
// (here a scale) is an argument named "const.<n>" whose value is in the
// .npz beside the model.
func.func @scaled(%x: tensor<4x3xf32> {het.name = "input"},
                  %y: tensor<4xi64> {het.name = "target"},
                  %w: tensor<2x3xf32> {het.param, het.name = "fc.weight"},
                  %c: tensor<f32> {het.name = "const.0"}) -> tensor<f32> {
  %h = het.linear %x, %w {het.layer = 0 : i64} : tensor<4x3xf32>, tensor<2x3xf32> -> tensor<4x2xf32>
  %s = het.mul %h, %c {het.layer = 0 : i64} : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
  %l = het.cross_entropy %s, %y {het.layer = 0 : i64} : tensor<4x2xf32>, tensor<4xi64> -> tensor<f32>
  return %l : tensor<f32>
}
