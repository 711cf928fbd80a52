// RUN: het-opt --het-partition="plan=%S/Inputs/two_stages.plan.json" %s | FileCheck %s
// RUN: het-opt --het-partition="plan=%S/Inputs/two_stages.plan.json" %s | het-opt | FileCheck %s

// The MLP training step cut into the two stages of the plan: layers [0, 2)
// on 4 A100s, layer 2 and the loss on 2 MI250Xs.

// CHECK-LABEL: het.cluster @mixed_node {
// CHECK-NEXT:    het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 4
// CHECK-NEXT:    het.device_group @mi250x kind #het.device<amd, "gfx90a"> count 4
// CHECK-NEXT:    het.link @a100, @a100 bandwidth_gbps
// CHECK-NEXT:    het.link @a100, @mi250x bandwidth_gbps
// CHECK-NEXT:    het.link @mi250x, @mi250x bandwidth_gbps
// CHECK-NEXT:  }

// Stage 0 takes x and the parameters of layers 0 and 1, sends the activation
// forward right after making it and receives its gradient back.
// CHECK-LABEL: het.stage @s0 on @mixed_node::@a100 replicas 4 samples 8 layers [0, 2)
// CHECK-SAME:    (%[[X:.*]]: tensor<32x64xf32>, %[[W1:.*]]: tensor<128x64xf32>, %{{.*}}: tensor<128xf32>, %{{.*}}: tensor<64x128xf32>, %{{.*}}: tensor<64xf32>)
// CHECK:         het.linear %[[X]], %[[W1]]
// CHECK:         %[[A2:.*]] = het.relu %{{.*}} {het.layer = 1 : i64} : tensor<32x64xf32>
// CHECK-NEXT:    het.send %[[A2]] to @s1 : tensor<32x64xf32>
// CHECK-NEXT:    %[[DA2:.*]] = het.recv from @s1 {het.backward} : tensor<32x64xf32>
// CHECK-NEXT:    het.relu_grad %[[DA2]]
// Its four parameter gradients are averaged over its 4 replicas by ring.
// CHECK-COUNT-4: het.all_reduce %{{.*}} over @s0 avg algorithm ring
// CHECK:         het.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x64xf32>, tensor<128xf32>, tensor<64x128xf32>, tensor<64xf32>

// Stage 1 receives the activation before its first use, copies the constant
// it needs, and sends the input gradient back.
// CHECK-LABEL: het.stage @s1 on @mixed_node::@mi250x replicas 2 samples 16 layers [2, 3)
// CHECK-SAME:    (%[[LABELS:.*]]: tensor<32xi64>, %{{.*}}: tensor<10x64xf32>, %{{.*}}: tensor<10xf32>)
// CHECK-NEXT:    %[[ACT:.*]] = het.recv from @s0 : tensor<32x64xf32>
// CHECK-NEXT:    het.linear %[[ACT]]
// CHECK-NEXT:    %[[LOSS:.*]] = het.cross_entropy
// CHECK-NEXT:    arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[DIN:.*]], %{{.*}}, %{{.*}} = het.linear_grad
// CHECK-NEXT:    het.send %[[DIN]] to @s0 {het.backward} : tensor<32x64xf32>
// CHECK-COUNT-2: het.all_reduce %{{.*}} over @s1 avg algorithm hierarchical
// CHECK:         het.yield %[[LOSS]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<10x64xf32>, tensor<10xf32>
// CHECK-NOT:   func.func

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
