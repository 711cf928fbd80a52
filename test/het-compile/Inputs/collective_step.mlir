// A training step with a collective: not something one CPU process runs.
het.cluster @lab {
  het.device_group @four kind #het.device<amd, "gfx90a"> count 4 memory_gib 64.0
}
func.func @m_train_step(%x: tensor<8x4xf32>) -> (tensor<f32> {het.name = "loss"}) {
  %0 = het.all_reduce %x over @lab::@four sum : tensor<8x4xf32> -> tensor<8x4xf32>
  %1 = het.reduce_sum %0 {axes = array<i64: 0, 1>} : tensor<8x4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
