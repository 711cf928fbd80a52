// Two large tensors cross the cut between layer 0 and layer 1 in each
// direction (8 MiB each, more than a shared-memory ring holds): layer 1
// reads both the linear output and its ReLU.
func.func @cut(%x: tensor<256x64xf32>, %labels: tensor<256xi64>,
               %w1: tensor<8192x64xf32> {het.param}, %b1: tensor<8192xf32> {het.param},
               %w2: tensor<10x8192xf32> {het.param}, %b2: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h = het.linear %x, %w1, %b1 {het.layer = 0 : i64}
      : tensor<256x64xf32>, tensor<8192x64xf32>, tensor<8192xf32> -> tensor<256x8192xf32>
  %a = het.relu %h {het.layer = 0 : i64} : tensor<256x8192xf32>
  %s = het.add %h, %a {het.layer = 1 : i64} : tensor<256x8192xf32>, tensor<256x8192xf32> -> tensor<256x8192xf32>
  %logits = het.linear %s, %w2, %b2 {het.layer = 1 : i64}
      : tensor<256x8192xf32>, tensor<10x8192xf32>, tensor<10xf32> -> tensor<256x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 1 : i64}
      : tensor<256x10xf32>, tensor<256xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
