// Gradient check of the mixture-of-experts ops (HetMoEOps.td) as a layer
// uses them: a router on logits from the tokens, dispatch into [E, C, D],
// the experts as one batched matmul, combine with the router's weights.
// Parameters are the tokens, the gate and the experts' weights, so the
// gradient reaches the logits through moe_router_grad, the tokens through
// dispatch's (combine) and the gate's, the weights through moe_slot_grad.
// het-autodiff's gradients are compared with five-point finite differences
// in 80-bit precision (the routing does not change under the steps).
// RUN: het-eval %s --check-gradients --samples 24 --tolerance 1e-6 | FileCheck %s

// CHECK: gradcheck @moe_layer: {{.*}} PASS
func.func @moe_layer(%x: tensor<6x4xf64> {het.param}, %gate: tensor<3x4xf64> {het.param},
                     %w: tensor<3x4x5xf64> {het.param}, %r: tensor<6x5xf64>) -> tensor<f64> {
  %logits = het.matmul %x, %gate {transpose_rhs} : tensor<6x4xf64>, tensor<3x4xf64> -> tensor<6x3xf64>
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64, normalize} : tensor<6x3xf64> -> tensor<6x2xf64>, tensor<6x2xi64>
  %buffer = het.moe_dispatch %x, %experts : tensor<6x4xf64>, tensor<6x2xi64> -> tensor<3x6x4xf64>
  %out = het.matmul %buffer, %w : tensor<3x6x4xf64>, tensor<3x4x5xf64> -> tensor<3x6x5xf64>
  %y = het.moe_combine %out, %experts, %weights : tensor<3x6x5xf64>, tensor<6x2xi64>, tensor<6x2xf64> -> tensor<6x5xf64>
  %weighted = het.mul %y, %r : tensor<6x5xf64>, tensor<6x5xf64> -> tensor<6x5xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// With a capacity of 2 rows per expert (factor 0.5: ceil(0.5 * 6 * 2 / 3))
// some choices are dropped; their tokens get no gradient through them.
// CHECK: gradcheck @moe_layer_capped: {{.*}} PASS
func.func @moe_layer_capped(%x: tensor<6x4xf64> {het.param}, %gate: tensor<3x4xf64> {het.param},
                            %w: tensor<3x4x5xf64> {het.param}, %r: tensor<6x5xf64>) -> tensor<f64> {
  %logits = het.matmul %x, %gate {transpose_rhs} : tensor<6x4xf64>, tensor<3x4xf64> -> tensor<6x3xf64>
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64} : tensor<6x3xf64> -> tensor<6x2xf64>, tensor<6x2xi64>
  %buffer = het.moe_dispatch %x, %experts {capacity_factor = 0.5 : f64} : tensor<6x4xf64>, tensor<6x2xi64> -> tensor<3x2x4xf64>
  %out = het.matmul %buffer, %w : tensor<3x2x4xf64>, tensor<3x4x5xf64> -> tensor<3x2x5xf64>
  %y = het.moe_combine %out, %experts, %weights : tensor<3x2x5xf64>, tensor<6x2xi64>, tensor<6x2xf64> -> tensor<6x5xf64>
  %weighted = het.mul %y, %r : tensor<6x5xf64>, tensor<6x5xf64> -> tensor<6x5xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// Weights applied at dispatch instead (the other operand order), combine
// unweighted: the dispatch's weight gradient is moe_slot_grad too.
// CHECK: gradcheck @weighted_dispatch: {{.*}} PASS
func.func @weighted_dispatch(%x: tensor<6x4xf64> {het.param}, %logits: tensor<6x3xf64> {het.param},
                             %r: tensor<6x4xf64>) -> tensor<f64> {
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64, normalize} : tensor<6x3xf64> -> tensor<6x2xf64>, tensor<6x2xi64>
  %buffer = het.moe_dispatch %x, %experts, %weights : tensor<6x4xf64>, tensor<6x2xi64>, tensor<6x2xf64> -> tensor<3x6x4xf64>
  %y = het.moe_combine %buffer, %experts : tensor<3x6x4xf64>, tensor<6x2xi64> -> tensor<6x4xf64>
  %weighted = het.mul %y, %r : tensor<6x4xf64>, tensor<6x4xf64> -> tensor<6x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// The Switch Transformer / Mixtral load-balancing loss E * sum_e f_e P_e:
// f (counted choices) has no gradient, P (mean probabilities) has.
// CHECK: gradcheck @load_balancing: {{.*}} PASS
func.func @load_balancing(%logits: tensor<6x3xf64> {het.param}) -> tensor<f64> {
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64} : tensor<6x3xf64> -> tensor<6x2xf64>, tensor<6x2xi64>
  %f = het.moe_expert_fraction %experts : tensor<6x2xi64> -> tensor<3xf64>
  %p = het.softmax %logits : tensor<6x3xf64>
  %mean = het.reduce_mean %p {axes = array<i64: 0>} : tensor<6x3xf64> -> tensor<3xf64>
  %fp = het.mul %f, %mean : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  %loss = het.reduce_sum %fp {axes = array<i64: 0>} : tensor<3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// The experts as grouped products over the rows the tokens filled (the
// first weight stacked as nn.Linear keeps it, [E, out, in]; the second
// [E, in, out]), with a capacity that drops choices, so the filled rows
// differ by expert; gelu(0) = 0 keeps nothing in the rows left out.
// CHECK: gradcheck @grouped_experts: {{.*}} PASS
func.func @grouped_experts(%x: tensor<6x4xf64> {het.param}, %logits: tensor<6x3xf64> {het.param},
                           %w1: tensor<3x5x4xf64> {het.param}, %w2: tensor<3x5x4xf64> {het.param},
                           %r: tensor<6x4xf64>) -> tensor<f64> {
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64, normalize} : tensor<6x3xf64> -> tensor<6x2xf64>, tensor<6x2xi64>
  %buffer = het.moe_dispatch %x, %experts {capacity_factor = 0.75 : f64} : tensor<6x4xf64>, tensor<6x2xi64> -> tensor<3x3x4xf64>
  %h = het.moe_expert_matmul %buffer, %w1, %experts {transpose_rhs} : tensor<3x3x4xf64>, tensor<3x5x4xf64>, tensor<6x2xi64> -> tensor<3x3x5xf64>
  %g = het.gelu %h : tensor<3x3x5xf64>
  %out = het.moe_expert_matmul %g, %w2, %experts : tensor<3x3x5xf64>, tensor<3x5x4xf64>, tensor<6x2xi64> -> tensor<3x3x4xf64>
  %y = het.moe_combine %out, %experts, %weights : tensor<3x3x4xf64>, tensor<6x2xi64>, tensor<6x2xf64> -> tensor<6x4xf64>
  %weighted = het.mul %y, %r : tensor<6x4xf64>, tensor<6x4xf64> -> tensor<6x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// Expert parallelism over a group of one member (every expert here):
// het.moe_to_experts hands the grouped products the filled rows with
// their counts as routing, het.moe_from_experts brings them back (the
// rows are given 8 of capacity, more than the 6 the dispatch fills).
// CHECK: gradcheck @exchanged_experts: {{.*}} PASS
func.func @exchanged_experts(%x: tensor<6x4xf64> {het.param}, %gate: tensor<3x4xf64> {het.param},
                             %w: tensor<3x4x5xf64> {het.param}, %r: tensor<6x5xf64>) -> tensor<f64> {
  %logits = het.matmul %x, %gate {transpose_rhs} : tensor<6x4xf64>, tensor<3x4xf64> -> tensor<6x3xf64>
  %weights, %experts = het.moe_router %logits {top_k = 2 : i64, normalize} : tensor<6x3xf64> -> tensor<6x2xf64>, tensor<6x2xi64>
  %buffer = het.moe_dispatch %x, %experts : tensor<6x4xf64>, tensor<6x2xi64> -> tensor<3x6x4xf64>
  %rows, %counts = het.moe_to_experts %buffer, %experts over @s0 experts [3] : tensor<3x6x4xf64>, tensor<6x2xi64> -> tensor<3x8x4xf64>, tensor<3xi64>
  %h = het.moe_expert_matmul %rows, %w, %counts : tensor<3x8x4xf64>, tensor<3x4x5xf64>, tensor<3xi64> -> tensor<3x8x5xf64>
  %back = het.moe_from_experts %h, %experts over @s0 experts [3] : tensor<3x8x5xf64>, tensor<6x2xi64> -> tensor<3x6x5xf64>
  %y = het.moe_combine %back, %experts, %weights : tensor<3x6x5xf64>, tensor<6x2xi64>, tensor<6x2xf64> -> tensor<6x5xf64>
  %weighted = het.mul %y, %r : tensor<6x5xf64>, tensor<6x5xf64> -> tensor<6x5xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
