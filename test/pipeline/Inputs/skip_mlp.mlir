// Six layers with a skip connection (layer 1's output added in layer 4), so
// that cutting it into 2-5 stages gives stage pairs with one and with two
// tensors between them and a value that crosses a stage without being used
// there: the shapes of pipeline traffic the schedule checker covers.
func.func @skip_mlp(%x: tensor<60x16xf32>, %labels: tensor<60xi64>,
                    %w0: tensor<32x16xf32> {het.param}, %b0: tensor<32xf32> {het.param},
                    %w1: tensor<32x32xf32> {het.param}, %b1: tensor<32xf32> {het.param},
                    %w2: tensor<32x32xf32> {het.param}, %b2: tensor<32xf32> {het.param},
                    %w3: tensor<32x32xf32> {het.param}, %b3: tensor<32xf32> {het.param},
                    %w4: tensor<32x32xf32> {het.param}, %b4: tensor<32xf32> {het.param},
                    %w5: tensor<10x32xf32> {het.param}, %b5: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h0 = het.linear %x, %w0, %b0 {het.layer = 0 : i64}
      : tensor<60x16xf32>, tensor<32x16xf32>, tensor<32xf32> -> tensor<60x32xf32>
  %a0 = het.relu %h0 {het.layer = 0 : i64} : tensor<60x32xf32>
  %h1 = het.linear %a0, %w1, %b1 {het.layer = 1 : i64}
      : tensor<60x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<60x32xf32>
  %a1 = het.relu %h1 {het.layer = 1 : i64} : tensor<60x32xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 2 : i64}
      : tensor<60x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<60x32xf32>
  %a2 = het.relu %h2 {het.layer = 2 : i64} : tensor<60x32xf32>
  %h3 = het.linear %a2, %w3, %b3 {het.layer = 3 : i64}
      : tensor<60x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<60x32xf32>
  %a3 = het.relu %h3 {het.layer = 3 : i64} : tensor<60x32xf32>
  %h4 = het.linear %a3, %w4, %b4 {het.layer = 4 : i64}
      : tensor<60x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<60x32xf32>
  %s4 = het.add %h4, %a1 {het.layer = 4 : i64}
      : tensor<60x32xf32>, tensor<60x32xf32> -> tensor<60x32xf32>
  %a4 = het.relu %s4 {het.layer = 4 : i64} : tensor<60x32xf32>
  %logits = het.linear %a4, %w5, %b5 {het.layer = 5 : i64}
      : tensor<60x32xf32>, tensor<10x32xf32>, tensor<10xf32> -> tensor<60x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 5 : i64}
      : tensor<60x10xf32>, tensor<60xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
