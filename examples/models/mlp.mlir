// A multilayer perceptron classifier for 8x8 digit images (64 features,
// 10 classes): 64 -> 128 -> 64 -> 10 with ReLU, mean cross-entropy loss.
// Every op carries the layer it belongs to; trainable arguments are het.param.
func.func @mlp(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
               %w1: tensor<128x64xf32> {het.param}, %b1: tensor<128xf32> {het.param},
               %w2: tensor<64x128xf32> {het.param}, %b2: tensor<64xf32> {het.param},
               %w3: tensor<10x64xf32> {het.param}, %b3: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64}
      : tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 1 : i64}
      : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %logits = het.linear %a2, %w3, %b3 {het.layer = 2 : i64}
      : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64}
      : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
