// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @reduce_no_axes(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'axes' must name at least one axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.reduce_sum %x {axes = array<i64>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_axis_range(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.reduce_mean %x {axes = array<i64: 2>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_twice(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{axis -1 is named twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.reduce_sum %x {axes = array<i64: 1, -1>} : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

func.func @sum_to_shape_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.sum_to_shape' op result element type must equal the input's}}
  %0 = het.sum_to_shape %x : tensor<4x8xf32> -> tensor<8xf64>
  return
}

// -----

func.func @sum_to_shape_shape(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.sum_to_shape' op result [3] does not broadcast to the input [4, 8]}}
  %0 = het.sum_to_shape %x : tensor<4x8xf32> -> tensor<3xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.reshape' op element count changes from 32 [4, 8] to 30 [5, 6]}}
  %0 = het.reshape %x : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.reshape' op cannot change the element type from 'f32' to 'f16'}}
  %0 = het.reshape %x : tensor<4x8xf32> -> tensor<32xf16>
  return
}

// -----

func.func @transpose_size(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation has 3 entries but the input has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @transpose_repeat(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation [1, 1] is not a permutation of 0..1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.transpose %x {permutation = array<i64: 1, 1>} : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}
