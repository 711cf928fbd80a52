// A model whose batch size is unknown: the CPU backend needs static shapes.
func.func @d(%x: tensor<?x4xf32>, %w: tensor<3x4xf32> {het.param}) -> tensor<f32> {
  %y = het.linear %x, %w : tensor<?x4xf32>, tensor<3x4xf32> -> tensor<?x3xf32>
  %l = het.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<?x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
