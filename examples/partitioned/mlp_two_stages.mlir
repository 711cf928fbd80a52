// The MLP example cut into two pipeline stages on a mixed node: layers
// [0, 2) on 4 NVIDIA A100s, layer 2 and the loss on 4 AMD MI250Xs. Each stage
// all-reduces its weight gradients over its replicas; activations and their
// gradients cross the vendor boundary through send/recv. This is the shape
// of IR that het-partition produces (hand-written here).
het.cluster @node {
  het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
  het.device_group @mi250x kind #het.device<amd, "gfx90a"> count 4 memory_gib 128.0
  het.link @a100, @a100 bandwidth_gbps 4800.0 latency_us 2.0
  het.link @mi250x, @mi250x bandwidth_gbps 3200.0 latency_us 2.0
  het.link @a100, @mi250x bandwidth_gbps 256.0 latency_us 5.0
}

het.stage @s0 on @node::@a100 replicas 4 layers [0, 2)
    (%x: tensor<32x64xf32>, %w1: tensor<128x64xf32>, %b1: tensor<128xf32>,
     %w2: tensor<64x128xf32>, %b2: tensor<64xf32>) {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64} : tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 1 : i64} : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  het.send %a2 to @s1 : tensor<32x64xf32>
  // Backward: the gradient of a2 comes back from the next stage.
  %da2 = het.recv from @s1 : tensor<32x64xf32>
  %dh2 = het.relu_grad %da2, %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %da1, %dw2, %db2 = het.linear_grad %dh2, %a1, %w2 {het.layer = 1 : i64} : tensor<32x64xf32>, tensor<32x128xf32>, tensor<64x128xf32> -> tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32>
  %dh1 = het.relu_grad %da1, %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %dx, %dw1, %db1 = het.linear_grad %dh1, %x, %w1 {het.layer = 0 : i64} : tensor<32x128xf32>, tensor<32x64xf32>, tensor<128x64xf32> -> tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32>
  %gw1 = het.all_reduce %dw1 over @s0 avg algorithm ring : tensor<128x64xf32> -> tensor<128x64xf32>
  %gb1 = het.all_reduce %db1 over @s0 avg algorithm ring : tensor<128xf32> -> tensor<128xf32>
  %gw2 = het.all_reduce %dw2 over @s0 avg algorithm ring compression int8 : tensor<64x128xf32> -> tensor<64x128xf32>
  %gb2 = het.all_reduce %db2 over @s0 avg algorithm ring : tensor<64xf32> -> tensor<64xf32>
  het.yield %gw1, %gb1, %gw2, %gb2 : tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>
}

het.stage @s1 on @node::@mi250x replicas 4 layers [2, 3)
    (%labels: tensor<32xi64>, %w3: tensor<10x64xf32>, %b3: tensor<10xf32>) {
  %a2 = het.recv from @s0 : tensor<32x64xf32>
  %logits = het.linear %a2, %w3, %b3 {het.layer = 2 : i64} : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %dlogits = het.cross_entropy_grad %one, %logits, %labels {het.layer = 2 : i64} : tensor<f32>, tensor<32x10xf32>, tensor<32xi64> -> tensor<32x10xf32>
  %da2, %dw3, %db3 = het.linear_grad %dlogits, %a2, %w3 {het.layer = 2 : i64} : tensor<32x10xf32>, tensor<32x64xf32>, tensor<10x64xf32> -> tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32>
  het.send %da2 to @s0 : tensor<32x64xf32>
  %gw3 = het.all_reduce %dw3 over @s1 avg algorithm hierarchical : tensor<10x64xf32> -> tensor<10x64xf32>
  %gb3 = het.all_reduce %db3 over @s1 avg : tensor<10xf32> -> tensor<10xf32>
  het.yield %loss, %gw3, %gb3 : tensor<f32>, tensor<10x64xf32>, tensor<10xf32>
}
