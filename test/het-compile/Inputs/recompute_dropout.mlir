// Dropout inside a layer (p = 0.2): layer 0's second product reads the
// dropout's output, so with full recomputation the backward recomputes the
// dropout, and its mask must be the forward's (a pure function of seed,
// stream, step and each element's index in the batch).
func.func @recompute_dropout(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
                             %w1: tensor<128x64xf32> {het.param}, %b1: tensor<128xf32> {het.param},
                             %w2: tensor<64x128xf32> {het.param}, %b2: tensor<64xf32> {het.param},
                             %w3: tensor<10x64xf32> {het.param}, %b3: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64}
      : tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %d1 = het.dropout %a1 {het.layer = 0 : i64, p = 0.2 : f64, seed = 5 : i64, stream = 0 : i64}
      : tensor<32x128xf32>
  %h2 = het.linear %d1, %w2, %b2 {het.layer = 0 : i64}
      : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %logits = het.linear %h2, %w3, %b3 {het.layer = 1 : i64}
      : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 1 : i64}
      : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
