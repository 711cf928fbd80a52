// Benchmark MLP: 784 -> 1024 -> 1024 -> 10 with ReLU, batch 256 (MNIST-sized).
func.func @mlp(%x: tensor<256x784xf32>, %labels: tensor<256xi64>,
               %w1: tensor<1024x784xf32> {het.param}, %b1: tensor<1024xf32> {het.param},
               %w2: tensor<1024x1024xf32> {het.param}, %b2: tensor<1024xf32> {het.param},
               %w3: tensor<10x1024xf32> {het.param}, %b3: tensor<10xf32> {het.param})
    -> tensor<f32> {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64}
      : tensor<256x784xf32>, tensor<1024x784xf32>, tensor<1024xf32> -> tensor<256x1024xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<256x1024xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 1 : i64}
      : tensor<256x1024xf32>, tensor<1024x1024xf32>, tensor<1024xf32> -> tensor<256x1024xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<256x1024xf32>
  %logits = het.linear %a2, %w3, %b3 {het.layer = 2 : i64}
      : tensor<256x1024xf32>, tensor<10x1024xf32>, tensor<10xf32> -> tensor<256x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64}
      : tensor<256x10xf32>, tensor<256xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
