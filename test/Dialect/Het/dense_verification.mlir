// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+2 {{matmul operands must have rank >= 2, got [4] and [4, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.matmul %a, %b : tensor<4xf32>, tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @matmul_k(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{contraction sizes differ: lhs has K = 3, rhs has K = 4 (after transposes)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.matmul %a, %b : tensor<4x3xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error @+2 {{batch dimensions differ: [2] vs [3] (rhs may also be a plain matrix)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.matmul %a, %b : tensor<2x4x3xf32>, tensor<3x3x5xf32> -> tensor<2x4x5xf32>
  return
}

// -----

func.func @matmul_types(%a: tensor<4x3xf32>, %b: tensor<3x5xf64>) {
  // expected-error @+2 {{matmul operands must all have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.matmul %a, %b : tensor<4x3xf32>, tensor<3x5xf64> -> tensor<4x5xf32>
  return
}

// -----

func.func @linear_scalar(%x: tensor<f32>, %w: tensor<4x4xf32>) {
  // expected-error @+2 {{linear input must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.linear %x, %w : tensor<f32>, tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @linear_weight_rank(%x: tensor<2x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+2 {{linear weight must be 2-D [out, in], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.linear %x, %w : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @linear_features(%x: tensor<2x4xf32>, %w: tensor<8x5xf32>) {
  // expected-error @+2 {{input features (4) differ from the weight's in-features (5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.linear %x, %w : tensor<2x4xf32>, tensor<8x5xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_bias(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{bias must have shape [out = 8], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.linear %x, %w, %b : tensor<2x4xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @linear_grad_rows(%dy: tensor<3x8xf32>, %x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+2 {{grad_output [3, 8] and input [2, 4] must agree in all but the last dimension}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.linear_grad %dy, %x, %w : tensor<3x8xf32>, tensor<2x4xf32>, tensor<8x4xf32> -> tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_grad_weight(%dy: tensor<2x8xf32>, %x: tensor<2x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{weight [4, 8] does not map input features 4 to output features 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.linear_grad %dy, %x, %w : tensor<2x8xf32>, tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x4xf32>, tensor<4x8xf32>, tensor<4xf32>
  return
}
