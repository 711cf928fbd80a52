// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @router_top_k(%logits: tensor<8x4xf32>) {
  // expected-error @+2 {{moe_router: top_k must be in [1, E = 4], got 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %w, %i = het.moe_router %logits {top_k = 5 : i64} : tensor<8x4xf32> -> tensor<8x5xf32>, tensor<8x5xi64>
  return
}

// -----

func.func @router_rank(%logits: tensor<8x4x2xf32>) {
  // expected-error @+2 {{moe_router: logits must be 2-D [T, E], got [8, 4, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %w, %i = het.moe_router %logits {top_k = 2 : i64} : tensor<8x4x2xf32> -> tensor<8x2xf32>, tensor<8x2xi64>
  return
}

// -----

func.func @dispatch_capacity(%x: tensor<8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{result must have 8 rows per expert for 8 tokens (no capacity_factor: every token), got 4}}
  %buf = het.moe_dispatch %x, %i : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x4x16xf32>
  return
}

// -----

func.func @dispatch_capacity_factor(%x: tensor<8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{result must have 5 rows per expert for 8 tokens at its capacity_factor, got 8}}
  %buf = het.moe_dispatch %x, %i {capacity_factor = 1.25 : f64} : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dispatch_tokens(%x: tensor<8x16xf32>, %i: tensor<6x2xi64>) {
  // expected-error @+1 {{moe_dispatch: indices have 6 tokens, the data 8}}
  %buf = het.moe_dispatch %x, %i : tensor<8x16xf32>, tensor<6x2xi64> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @dispatch_width(%x: tensor<8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{moe_dispatch: the result rows have 8 elements, the tokens 16}}
  %buf = het.moe_dispatch %x, %i : tensor<8x16xf32>, tensor<8x2xi64> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @combine_weights(%out: tensor<4x8x16xf32>, %i: tensor<8x2xi64>, %w: tensor<8x3xf32>) {
  // expected-error @+2 {{moe_combine: weights must have the indices' shape [8, 2], got [8, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = het.moe_combine %out, %i, %w : tensor<4x8x16xf32>, tensor<8x2xi64>, tensor<8x3xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @combine_buffer(%out: tensor<4x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+2 {{moe_combine: expert_output must be 3-D [E, C, D], got [4, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = het.moe_combine %out, %i : tensor<4x16xf32>, tensor<8x2xi64> -> tensor<8x16xf32>
  return
}

// -----

func.func @fraction_result(%i: tensor<8x2xi64>) {
  // expected-error @+1 {{result must be 1-D [E] with at least one expert, got [4, 2]}}
  %f = het.moe_expert_fraction %i : tensor<8x2xi64> -> tensor<4x2xf32>
  return
}

// -----

func.func @expert_matmul_contraction(%buf: tensor<4x8x16xf32>, %w: tensor<4x32x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+2 {{moe_expert_matmul: rows [4, 8, 16] do not contract with weight [4, 32, 16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %h = het.moe_expert_matmul %buf, %w, %i : tensor<4x8x16xf32>, tensor<4x32x16xf32>, tensor<8x2xi64> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @exchange_experts_total(%buf: tensor<4x8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{experts hold 3 experts in all; the dispatch buffer has 4}}
  %r, %n = het.moe_to_experts %buf, %i over @s0 experts [2, 1] : tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<2x16x16xf32>, tensor<2xi64>
  return
}

// -----

func.func @exchange_experts_here(%buf: tensor<4x8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{holds 2 experts here, which no member's count (3, 1) is}}
  %r, %n = het.moe_to_experts %buf, %i over @s0 experts [3, 1] : tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<2x16x16xf32>, tensor<2xi64>
  return
}

// -----

func.func @exchange_rows(%buf: tensor<4x8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{gives its experts 4 rows, fewer than this member's capacity 8}}
  %r, %n = het.moe_to_experts %buf, %i over @s0 experts [3, 1] : tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<3x4x16xf32>, tensor<3xi64>
  return
}

// -----

func.func @exchange_counts(%buf: tensor<4x8x16xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{counts must be [E_m] = [3], got [4]}}
  %r, %n = het.moe_to_experts %buf, %i over @s0 experts [3, 1] : tensor<4x8x16xf32>, tensor<8x2xi64> -> tensor<3x16x16xf32>, tensor<4xi64>
  return
}

// -----

func.func @exchange_back_width(%rows: tensor<3x16x8xf32>, %i: tensor<8x2xi64>) {
  // expected-error @+1 {{moves rows of 16 features into rows of 8}}
  %b = het.moe_from_experts %rows, %i over @s0 experts [3, 1] : tensor<3x16x8xf32>, tensor<8x2xi64> -> tensor<4x8x16xf32>
  return
}

// -----

func.func @grouped_product_counts(%rows: tensor<3x16x8xf32>, %w: tensor<3x8x4xf32>, %n: tensor<4xi64>) {
  // expected-error @+2 {{moe_expert_matmul: counts of filled rows must be [E] = [3], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = het.moe_expert_matmul %rows, %w, %n : tensor<3x16x8xf32>, tensor<3x8x4xf32>, tensor<4xi64> -> tensor<3x16x4xf32>
  return
}
