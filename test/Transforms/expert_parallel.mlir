// RUN: het-opt %s --het-expert-parallel="stages=s0:0:2:2/1:2/1:0 samples=2" | FileCheck %s
// RUN: het-opt %s --het-expert-parallel="stages=s0:0:2:2/1:2/1:1 samples=2" | FileCheck %s --check-prefix=ONE
// RUN: het-opt %s --het-expert-parallel="stages=s0:0:2:2/1:2/1:0 samples=2" --het-autodiff="optimizer=sgd" | FileCheck %s --check-prefix=GRAD
// RUN: not het-opt %s --het-expert-parallel="stages=s0:0:2:2/2:2/1:0 samples=2" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not het-opt %s --het-expert-parallel="stages=s0:0:1:2/1:2/1:0 samples=2" 2>&1 | FileCheck %s --check-prefix=NOLAYER
// RUN: not het-opt %s --het-expert-parallel="stages=s0:0:2:2/1 samples=2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: het-opt %s --het-expert-parallel="stages=s0:0:2:2/1:2/1:1 samples=2 function=joined" | FileCheck %s --check-prefix=JOINED

// Three experts (SwiGLU, as Mixtral's: silu(x w1) * x w3, then w2) over the two replicas of stage s0:
// 2 on the first, 1 on the second; this replica takes 2 of the 3 samples
// of each micro-batch (4 tokens of 2 per sample), the other 1, so each
// expert receives at most 4 + 2 = 6 rows (dropless: every token once).
// CHECK-LABEL: func.func @moe
// CHECK-SAME: %arg2: tensor<2x4x8xf32> {het.expert_parallel = "s0", het.param}
// CHECK-SAME: %arg3: tensor<2x4x8xf32> {het.expert_parallel = "s0", het.param}
// CHECK-SAME: %arg4: tensor<2x8x4xf32> {het.expert_parallel = "s0", het.param}
// CHECK: %[[BUF:[0-9]+]] = het.moe_dispatch {{.*}} -> tensor<3x4x4xf32>
// CHECK: %[[ROWS:[a-z_0-9]+]], %[[COUNTS:[a-z_0-9]+]] = het.moe_to_experts %[[BUF]], %{{.*}} over @s0 experts [2, 1] {het.layer = 1 : i64} : tensor<3x4x4xf32>, tensor<4x2xi64> -> tensor<2x6x4xf32>, tensor<2xi64>
// CHECK: het.moe_expert_matmul %[[ROWS]], %arg2, %[[COUNTS]] {{.*}}: tensor<2x6x4xf32>, tensor<2x4x8xf32>, tensor<2xi64> -> tensor<2x6x8xf32>
// CHECK: het.elementwise {{.*}}: (tensor<2x6x8xf32>, tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
// CHECK: %[[OUT:[0-9]+]] = het.moe_expert_matmul {{.*}}, %arg4, %[[COUNTS]] {{.*}}: tensor<2x6x8xf32>, tensor<2x8x4xf32>, tensor<2xi64> -> tensor<2x6x4xf32>
// CHECK: %[[BACK:[0-9]+]] = het.moe_from_experts %[[OUT]], %{{.*}} over @s0 experts [2, 1] {het.layer = 1 : i64} : tensor<2x6x4xf32>, tensor<4x2xi64> -> tensor<3x4x4xf32>
// CHECK: het.moe_combine %[[BACK]]

// The build for the second replica, holding one expert.
// ONE-LABEL: func.func @moe
// ONE-SAME: %arg2: tensor<1x4x8xf32> {het.expert_parallel = "s0", het.param}
// ONE: het.moe_to_experts {{.*}} -> tensor<1x6x4xf32>, tensor<1xi64>

// Backward: the gradient of moe_from_experts is moe_to_experts (the
// tokens' input is no parameter here, so nothing goes back through the
// first exchange); the experts' weight gradients take the counts as
// routing.
// GRAD-LABEL: func.func @moe_train_step
// GRAD: het.moe_to_experts
// GRAD: het.moe_from_experts
// GRAD: %[[DOUT:[a-z_0-9]+]], %{{.*}} = het.moe_to_experts %{{.*}}, %indices over @s0 experts [2, 1] {{.*}}-> tensor<2x6x4xf32>, tensor<2xi64>
// GRAD: het.moe_expert_weight_grad %{{.*}}, %[[DOUT]], %counts {{.*}}: tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<2xi64> -> tensor<2x8x4xf32>

// COUNT: error: het-expert-parallel: stage 's0', layer 1: the replicas hold 4 experts in all (experts 2/2), but the layer has 3
// NOLAYER: error: het-expert-parallel: stage 's0' spreads experts over its replicas, but its layers [0, 1) have no mixture-of-experts layer (het.moe_dispatch)
// BAD: error: het-expert-parallel: bad stages entry 's0:0:2:2/1'

func.func @moe(%x: tensor<4x4xf32>, %gate: tensor<3x4xf32> {het.param},
               %w1: tensor<3x4x8xf32> {het.param}, %w3: tensor<3x4x8xf32> {het.param},
               %w2: tensor<3x8x4xf32> {het.param}) -> tensor<f32> {
  %logits = het.matmul %x, %gate {transpose_rhs, het.layer = 0 : i64} : tensor<4x4xf32>, tensor<3x4xf32> -> tensor<4x3xf32>
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64, normalize, het.layer = 1 : i64} : tensor<4x3xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %buffer = het.moe_dispatch %x, %experts {het.layer = 1 : i64} : tensor<4x4xf32>, tensor<4x2xi64> -> tensor<3x4x4xf32>
  %g = het.moe_expert_matmul %buffer, %w1, %experts {het.layer = 1 : i64} : tensor<3x4x4xf32>, tensor<3x4x8xf32>, tensor<4x2xi64> -> tensor<3x4x8xf32>
  %u = het.moe_expert_matmul %buffer, %w3, %experts {het.layer = 1 : i64} : tensor<3x4x4xf32>, tensor<3x4x8xf32>, tensor<4x2xi64> -> tensor<3x4x8xf32>
  %h = het.elementwise %g, %u {het.layer = 1 : i64} : (tensor<3x4x8xf32>, tensor<3x4x8xf32>) -> tensor<3x4x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %a, %d : f32
    %r = arith.mulf %s, %b : f32
    het.yield %r : f32
  }
  %out = het.moe_expert_matmul %h, %w2, %experts {het.layer = 1 : i64} : tensor<3x4x8xf32>, tensor<3x8x4xf32>, tensor<4x2xi64> -> tensor<3x4x4xf32>
  %y = het.moe_combine %out, %experts, %weights {het.layer = 1 : i64} : tensor<3x4x4xf32>, tensor<4x2xi64>, tensor<4x2xf32> -> tensor<4x4xf32>
  %loss = het.reduce_mean %y {axes = array<i64: 0, 1>, het.layer = 1 : i64} : tensor<4x4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// Experts as parameters of their own (PyTorch's per-expert nn.Linear
// weights, joined as the importer joins them): the second replica's model
// joins only its expert's parameter, and the other experts' parameters
// leave its model.
// JOINED-LABEL: func.func @joined
// JOINED-SAME: (%arg0: tensor<4x4xf32>, %arg1: tensor<3x4xf32> {het.param}, %arg2: tensor<8x4xf32> {het.param}) -> tensor<f32>
// JOINED: %[[R:[a-z_0-9]+]], %[[N:[a-z_0-9]+]] = het.moe_to_experts
// JOINED: %[[W:[0-9]+]] = het.reshape %arg2 {het.layer = 1 : i64} : tensor<8x4xf32> -> tensor<1x8x4xf32>
// JOINED: het.moe_expert_matmul %[[R]], %[[W]], %[[N]] {het.layer = 1 : i64, transpose_rhs} : tensor<1x6x4xf32>, tensor<1x8x4xf32>, tensor<1xi64> -> tensor<1x6x8xf32>
func.func @joined(%x: tensor<4x4xf32>, %gate: tensor<3x4xf32> {het.param},
                  %e0: tensor<8x4xf32> {het.param}, %e1: tensor<8x4xf32> {het.param},
                  %e2: tensor<8x4xf32> {het.param}) -> tensor<f32> {
  %logits = het.matmul %x, %gate {transpose_rhs, het.layer = 0 : i64} : tensor<4x4xf32>, tensor<3x4xf32> -> tensor<4x3xf32>
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64, normalize, het.layer = 1 : i64} : tensor<4x3xf32> -> tensor<4x2xf32>, tensor<4x2xi64>
  %buffer = het.moe_dispatch %x, %experts {het.layer = 1 : i64} : tensor<4x4xf32>, tensor<4x2xi64> -> tensor<3x4x4xf32>
  %cat = het.concat %e0, %e1, %e2 {axis = 0 : i64, het.layer = 1 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<24x4xf32>
  %w = het.reshape %cat {het.layer = 1 : i64} : tensor<24x4xf32> -> tensor<3x8x4xf32>
  %h = het.moe_expert_matmul %buffer, %w, %experts {transpose_rhs, het.layer = 1 : i64} : tensor<3x4x4xf32>, tensor<3x8x4xf32>, tensor<4x2xi64> -> tensor<3x4x8xf32>
  %y8 = het.moe_combine %h, %experts, %weights {het.layer = 1 : i64} : tensor<3x4x8xf32>, tensor<4x2xi64>, tensor<4x2xf32> -> tensor<4x8xf32>
  %loss = het.reduce_mean %y8 {axes = array<i64: 0, 1>, het.layer = 1 : i64} : tensor<4x8xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
