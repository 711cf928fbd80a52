// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @mixed_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{operands must have the same element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.add %a, %b : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----

func.func @not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{operands are not broadcast-compatible: [4, 3] and [4] differ in dimension 1 of the result (3 vs 4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.mul %a, %b : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @wrong_result(%a: tensor<4x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'het.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.sub %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @integer_relu(%a: tensor<4xi32>) {
  // expected-error @+1 {{'het.relu' op operand #0 must be ranked tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = het.relu %a : tensor<4xi32>
  return
}

// -----

func.func @unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{must be ranked tensor of}}
  %0 = "het.gelu"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  return
}
