// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @features(%q: tensor<2x16x8xf32>, %k: tensor<2x16x4xf32>, %v: tensor<2x16x8xf32>) {
  // expected-error @+2 {{query and key feature sizes differ: [2, 16, 8] and [2, 16, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %k, %v : tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return
}

// -----

func.func @keys(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x12x8xf32>) {
  // expected-error @+2 {{key and value counts differ: [2, 16, 8] and [2, 12, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %k, %v : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x12x8xf32> -> tensor<2x16x8xf32>
  return
}

// -----

func.func @batch(%q: tensor<2x16x8xf32>, %k: tensor<3x16x8xf32>, %v: tensor<3x16x8xf32>) {
  // expected-error @+2 {{attention operands differ in leading dimension 0: [2, 16, 8], [3, 16, 8] and [3, 16, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %k, %v : tensor<2x16x8xf32>, tensor<3x16x8xf32>, tensor<3x16x8xf32> -> tensor<2x16x8xf32>
  return
}

// -----

func.func @rank(%q: tensor<2x16x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>) {
  // expected-error @+2 {{attention needs query, key and value of one rank >= 2, got [2, 16, 8], [16, 8] and [16, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %k, %v : tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32> -> tensor<2x16x8xf32>
  return
}

// -----

func.func @scale(%q: tensor<16x8xf32>) {
  // expected-error @+2 {{attention 'scale' must be positive and finite, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %q, %q {scale = -1.0 : f64} : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @result(%q: tensor<16x8xf32>, %v: tensor<16x4xf32>) {
  // expected-error @+2 {{'het.attention' op inferred type(s) 'tensor<16x4xf32>' are incompatible with return type(s) of operation 'tensor<16x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %q, %v : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x4xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @grad_output(%q: tensor<16x8xf32>, %do: tensor<16x4xf32>) {
  // expected-error @+2 {{attention gradient's grad_output must be [16, 8], got [16, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.attention_grad %do, %q, %q, %q, %q : tensor<16x4xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @element_types(%q: tensor<16x8xf32>, %k: tensor<16x8xf64>) {
  // expected-error @+2 {{attention operands}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.attention %q, %k, %k : tensor<16x8xf32>, tensor<16x8xf64>, tensor<16x8xf64> -> tensor<16x8xf32>
  return
}
