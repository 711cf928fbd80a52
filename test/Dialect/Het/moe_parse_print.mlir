// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func.func @moe_block
// CHECK: het.moe_router %{{.*}} {normalize, top_k = 2 : i64} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
// CHECK: het.moe_dispatch %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x8x16xf32>
// CHECK: het.moe_dispatch %{{.*}}, %{{.*}} {capacity_factor = 1.250000e+00 : f64} : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x5x16xf32>
// CHECK: het.moe_combine %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8x16xf32>, tensor<8x2xi64>, tensor<8x2xf32> -> tensor<8x16xf32>
// CHECK: het.moe_slot_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<8x2xf32>
// CHECK: het.moe_router_grad %{{.*}}, %{{.*}}, %{{.*}} {normalize} : tensor<8x2xf32>, tensor<8x4xf32>, tensor<8x2xi64> -> tensor<8x4xf32>
// CHECK: het.moe_expert_fraction %{{.*}} : tensor<8x2xi64> -> tensor<4xf32>
// CHECK: het.moe_expert_matmul %{{.*}}, %{{.*}}, %{{.*}} {transpose_rhs} : tensor<4x8x16xf32>, tensor<4x32x16xf32>, tensor<8x2xi64> -> tensor<4x8x32xf32>
// CHECK: het.moe_expert_weight_grad %{{.*}}, %{{.*}}, %{{.*}} {transpose_result} : tensor<4x8x16xf32>, tensor<4x8x32xf32>, tensor<8x2xi64> -> tensor<4x32x16xf32>
func.func @moe_block(%x: tensor<8x16xf32>, %logits: tensor<8x4xf32>, %we: tensor<4x32x16xf32>) {
  %w, %i = het.moe_router %logits {top_k = 2 : i64, normalize} : tensor<8x4xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
  %buf = het.moe_dispatch %x, %i : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x8x16xf32>
  // ceil(1.25 * 8 * 2 / 4) = 5 rows per expert
  %capped = het.moe_dispatch %x, %i {capacity_factor = 1.25 : f64} : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x5x16xf32>
  %y = het.moe_combine %buf, %i, %w : tensor<4x8x16xf32>, tensor<8x2xi64>, tensor<8x2xf32> -> tensor<8x16xf32>
  %dw = het.moe_slot_grad %y, %buf, %i : tensor<8x16xf32>, tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<8x2xf32>
  %dl = het.moe_router_grad %dw, %logits, %i {normalize} : tensor<8x2xf32>, tensor<8x4xf32>, tensor<8x2xi64> -> tensor<8x4xf32>
  %f = het.moe_expert_fraction %i : tensor<8x2xi64> -> tensor<4xf32>
  %h = het.moe_expert_matmul %buf, %we, %i {transpose_rhs} : tensor<4x8x16xf32>, tensor<4x32x16xf32>, tensor<8x2xi64> -> tensor<4x8x32xf32>
  %dwe = het.moe_expert_weight_grad %buf, %h, %i {transpose_result} : tensor<4x8x16xf32>, tensor<4x8x32xf32>, tensor<8x2xi64> -> tensor<4x32x16xf32>
  return
}

// Expert parallelism: the exchange over a stage's replicas and a grouped
// product routed by the received counts.
// CHECK-LABEL: func.func @exchange
// CHECK: %[[R:.*]], %[[N:.*]] = het.moe_to_experts %{{.*}}, %{{.*}} over @s0 experts [3, 1] : tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<3x16x16xf32>, tensor<3xi64>
// CHECK: het.moe_expert_matmul %[[R]], %{{.*}}, %[[N]] : tensor<3x16x16xf32>, tensor<3x16x32xf32>, tensor<3xi64> -> tensor<3x16x32xf32>
// CHECK: het.moe_from_experts %{{.*}}, %{{.*}} over @s0 experts [3, 1] : tensor<3x16x32xf32>, tensor<8x2xi64> -> tensor<4x8x32xf32>
func.func @exchange(%buf: tensor<4x8x16xf32>, %i: tensor<8x2xi64>, %w: tensor<3x16x32xf32>) -> tensor<4x8x32xf32> {
  %r, %n = het.moe_to_experts %buf, %i over @s0 experts [3, 1] : tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<3x16x16xf32>, tensor<3xi64>
  %h = het.moe_expert_matmul %r, %w, %n : tensor<3x16x16xf32>, tensor<3x16x32xf32>, tensor<3xi64> -> tensor<3x16x32xf32>
  %b = het.moe_from_experts %h, %i over @s0 experts [3, 1] : tensor<3x16x32xf32>, tensor<8x2xi64> -> tensor<4x8x32xf32>
  return %b : tensor<4x8x32xf32>
}
