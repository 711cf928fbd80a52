// The digits MLP with dropout (p = 0.2) after each hidden layer: its masks
// depend on the step and on each sample's place in the step's batch, so
// any split into stages, replicas and micro-batches draws the same masks.
func.func @dropout_mlp(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
                       %w1: tensor<128x64xf32> {het.param}, %b1: tensor<128xf32> {het.param},
                       %w2: tensor<64x128xf32> {het.param}, %b2: tensor<64xf32> {het.param},
                       %w3: tensor<10x64xf32> {het.param}, %b3: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64}
      : tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %d1 = het.dropout %a1 {het.layer = 0 : i64, p = 0.2 : f64, seed = 5 : i64, stream = 0 : i64}
      : tensor<32x128xf32>
  %h2 = het.linear %d1, %w2, %b2 {het.layer = 1 : i64}
      : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %d2 = het.dropout %a2 {het.layer = 1 : i64, p = 0.2 : f64, seed = 5 : i64, stream = 1 : i64}
      : tensor<32x64xf32>
  %logits = het.linear %d2, %w3, %b3 {het.layer = 2 : i64}
      : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64}
      : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
