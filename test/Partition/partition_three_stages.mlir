// RUN: het-opt --het-partition="plan=%S/Inputs/three_stages.plan.json" %s | FileCheck %s

// Three stages on three vendors. A tensor used by two later layers crosses
// each boundary once; the middle stage talks to both neighbours; a stage
// with one replica gets no all-reduce.

// CHECK-LABEL: het.cluster @lab
// CHECK:         het.device_group @cpu kind #het.device<cpu, "x86_64"> count 1
// CHECK-LABEL: het.stage @s0 on @lab::@a100 replicas 8 samples 1 layers [0, 1)
// CHECK:         %[[A1:.*]] = het.relu
// CHECK-NEXT:    het.send %[[A1]] to @s1 : tensor<32x128xf32>
// CHECK-NOT:     het.send
// CHECK:         het.recv from @s1 {het.backward} : tensor<32x128xf32>
// CHECK-COUNT-2: het.all_reduce {{.*}} over @s0 avg algorithm tree
// CHECK-LABEL: het.stage @s1 on @lab::@mi300x replicas 8 samples 1 layers [1, 2)
// CHECK:         %[[IN:.*]] = het.recv from @s0 : tensor<32x128xf32>
// CHECK:         het.send %{{.*}} to @s2 : tensor<32x64xf32>
// CHECK:         het.recv from @s2 {het.backward} : tensor<32x64xf32>
// CHECK:         het.linear_grad %{{.*}}, %[[IN]]
// CHECK:         het.send %{{.*}} to @s0 {het.backward} : tensor<32x128xf32>
// CHECK-COUNT-2: het.all_reduce {{.*}} over @s1 avg algorithm ring
// CHECK-LABEL: het.stage @s2 on @lab::@cpu replicas 1 samples 8 layers [2, 3)
// CHECK-NOT:     het.all_reduce
// CHECK:         het.yield

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
