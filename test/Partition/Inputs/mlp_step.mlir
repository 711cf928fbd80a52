// One training step (forward, loss, backward) of examples/models/mlp.mlir
// written as one function, the shape het-autodiff will produce: what
// het-partition cuts into stages. Returns the loss and the six gradients.
func.func @mlp_step(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
                    %w1: tensor<128x64xf32> {het.param}, %b1: tensor<128xf32> {het.param},
                    %w2: tensor<64x128xf32> {het.param}, %b2: tensor<64xf32> {het.param},
                    %w3: tensor<10x64xf32> {het.param}, %b3: tensor<10xf32> {het.param})
    -> (tensor<f32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>,
        tensor<64xf32>, tensor<10x64xf32>, tensor<10xf32>) {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64} : tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 1 : i64} : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %logits = het.linear %a2, %w3, %b3 {het.layer = 2 : i64} : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dlogits = het.cross_entropy_grad %one, %logits, %labels {het.layer = 2 : i64} : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  %da2, %dw3, %db3 = het.linear_grad %dlogits, %a2, %w3 {het.layer = 2 : i64} : tensor<32x10xf32>, tensor<32x64xf32>, tensor<10x64xf32> -> tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32>
  %dh2 = het.relu_grad %da2, %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %da1, %dw2, %db2 = het.linear_grad %dh2, %a1, %w2 {het.layer = 1 : i64} : tensor<32x64xf32>, tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32>
  %dh1 = het.relu_grad %da1, %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %dx, %dw1, %db1 = het.linear_grad %dh1, %x, %w1 {het.layer = 0 : i64} : tensor<32x128xf32>, tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>
  return %loss, %dw1, %db1, %dw2, %db2, %dw3, %db3 : tensor<f32>, tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>, tensor<10x64xf32>, tensor<10xf32>
}
