// RUN: het-opt --het-partition="plan=%S/Inputs/two_stages.plan.json" %s | FileCheck %s

// A module as het-autodiff leaves it: the forward function for inference and
// @<model>_train_step, whose updates carry the layer of their parameter.
// het-partition picks the training step, and every stage averages each
// gradient over its replicas right before the optimizer uses it.

// The forward function stays for inference.
// CHECK-LABEL: func.func @mlp(
// CHECK-LABEL: het.stage @s0 on @mixed_node::@a100 replicas 4 samples 8 layers [0, 2)
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = het.linear_grad %{{.*}}, %{{.*}}, %[[W1:[^ ]*]] {het.backward, het.layer = 0 : i64}
// CHECK:         %[[G:.*]] = het.all_reduce %{{.*}} over @s0 avg algorithm ring : tensor<128x64xf32>
// CHECK-NEXT:    het.sgd %[[W1]], %[[G]], %{{.*}} {het.layer = 0 : i64
// CHECK-LABEL: het.stage @s1 on @mixed_node::@mi250x replicas 2 samples 16 layers [2, 3)
// CHECK:         %[[G3:.*]] = het.all_reduce %{{.*}} over @s1 avg algorithm hierarchical : tensor<10x64xf32>
// CHECK-NEXT:    het.sgd %{{.*}}, %[[G3]], %{{.*}} {het.layer = 2 : i64
// CHECK:         het.yield %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<10x64xf32>, tensor<10x64xf32>
// CHECK-NOT:   func.func @mlp_train_step


func.func @mlp(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
               %w1: tensor<128x64xf32> {het.param}, %b1: tensor<128xf32> {het.param},
               %w2: tensor<64x128xf32> {het.param}, %b2: tensor<64xf32> {het.param},
               %w3: tensor<10x64xf32> {het.param}, %b3: tensor<10xf32> {het.param}) -> tensor<f32> {
  %h1 = het.linear %x, %w1, %b1 {het.layer = 0 : i64} : tensor<32x64xf32>, tensor<128x64xf32>, tensor<128xf32> -> tensor<32x128xf32>
  %a1 = het.relu %h1 {het.layer = 0 : i64} : tensor<32x128xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 1 : i64} : tensor<32x128xf32>, tensor<64x128xf32>, tensor<64xf32> -> tensor<32x64xf32>
  %a2 = het.relu %h2 {het.layer = 1 : i64} : tensor<32x64xf32>
  %logits = het.linear %a2, %w3, %b3 {het.layer = 2 : i64} : tensor<32x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<32x10xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 2 : i64} : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// Weights only are updated (biases kept fixed) to keep the test short.
func.func @mlp_train_step(%x: tensor<32x64xf32>, %labels: tensor<32xi64>,
                          %w1: tensor<128x64xf32> {het.param}, %b1: tensor<128xf32> {het.param},
                          %w2: tensor<64x128xf32> {het.param}, %b2: tensor<64xf32> {het.param},
                          %w3: tensor<10x64xf32> {het.param}, %b3: tensor<10xf32> {het.param},
                          %m1: tensor<128x64xf32>, %m2: tensor<64x128xf32>, %m3: tensor<10x64xf32>)
    -> (tensor<f32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<10x64xf32>,
        tensor<128x64xf32>, tensor<64x128xf32>, tensor<10x64xf32>) {
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
  %nw1, %nm1 = het.sgd %w1, %dw1, %m1 {lr = 0.1 : f64, momentum = 0.9 : f64, het.layer = 0 : i64} : tensor<128x64xf32>
  %nw2, %nm2 = het.sgd %w2, %dw2, %m2 {lr = 0.1 : f64, momentum = 0.9 : f64, het.layer = 1 : i64} : tensor<64x128xf32>
  %nw3, %nm3 = het.sgd %w3, %dw3, %m3 {lr = 0.1 : f64, momentum = 0.9 : f64, het.layer = 2 : i64} : tensor<10x64xf32>
  return %loss, %nw1, %nw2, %nw3, %nm1, %nm2, %nm3 : tensor<f32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<10x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>, tensor<10x64xf32>
}
