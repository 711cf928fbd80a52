func.func @labels(%x: tensor<2x3xf32>, %l: tensor<2xi64>) -> tensor<f32> {
  %loss = het.cross_entropy %x, %l : tensor<2x3xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
func.func @unsupported(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = math.exp %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @named(%x: tensor<2xf32> {het.name = "input"}) -> (tensor<2xf32> {het.name = "out"}) {
  %y = het.relu %x : tensor<2xf32>
  return %y : tensor<2xf32>
}
