// A multilayer perceptron whose first and third linear layers share one
// weight (a tied parameter, as a language model's token embedding and
// output head): 64 -> 64 (w) -> 64 (w2) -> 64 (w again) -> 10.
func.func @tied_mlp(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
                    %w: tensor<64x64xf32> {het.param}, %b1: tensor<64xf32> {het.param},
                    %w2: tensor<64x64xf32> {het.param}, %b2: tensor<64xf32> {het.param},
                    %b3: tensor<64xf32> {het.param},
                    %w4: tensor<10x64xf32> {het.param}, %b4: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h1 = het.linear %x, %w, %b1 {het.layer = 0 : i64}
      : tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x64xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 1 : i64}
      : tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %h3 = het.linear %a2, %w, %b3 {het.layer = 2 : i64}
      : tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a3 = het.relu %h3 {het.layer = 2 : i64} : tensor<32x64xf32>
  %logits = het.linear %a3, %w4, %b4 {het.layer = 2 : i64}
      : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64}
      : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
