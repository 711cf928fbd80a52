// One attention per layer for the planner: q from a linear layer (layer 0),
// het.attention (layer 1), a sum (layer 2); batch 2, 4 queries and keys, width 3.
func.func @att(%x: tensor<2x4x3xf32>, %wq: tensor<3x3xf32> {het.param}) -> tensor<f32> {
  %q = het.linear %x, %wq {het.layer = 0 : i64} : tensor<2x4x3xf32>, tensor<3x3xf32> -> tensor<2x4x3xf32>
  %o = het.attention %q, %x, %x {causal, het.layer = 1 : i64} : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32> -> tensor<2x4x3xf32>
  %l = het.reduce_sum %o {axes = array<i64: 0, 1, 2>, het.layer = 2 : i64} : tensor<2x4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
