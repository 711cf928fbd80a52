// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @softmax_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.softmax' op axis 2 is out of range for rank 2}}
  %0 = het.softmax %x {axis = 2 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_scale(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.softmax' op 'scale' must be positive and finite, got 0.000000e+00}}
  %0 = het.softmax %x {scale = 0.0 : f64} : tensor<4x8xf32>
  return
}

// -----

func.func @causal_rank(%x: tensor<8xf32>) {
  // expected-error @+1 {{'het.softmax' op causal softmax needs rank >= 2 ([..., queries, keys])}}
  %0 = het.softmax %x {causal} : tensor<8xf32>
  return
}

// -----

func.func @causal_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.softmax' op causal softmax must normalize the last axis, got axis 0}}
  %0 = het.softmax %x {causal, axis = 0 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @softmax_grad_axis(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.softmax_grad' op axis -3 is out of range for rank 2}}
  %0 = het.softmax_grad %x, %x {axis = -3 : i64} : tensor<4x8xf32>
  return
}

// -----

func.func @ce_rank(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+2 {{logits must be [..., classes] with rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.cross_entropy %l, %y : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----

func.func @ce_labels(%l: tensor<64x10xf32>, %y: tensor<32xi64>) {
  // expected-error @+2 {{labels must have the logits' shape without the class dimension, [64], got [32]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.cross_entropy %l, %y : tensor<64x10xf32>, tensor<32xi64> -> tensor<f32>
  return
}

// -----

func.func @ce_float_labels(%l: tensor<64x10xf32>, %y: tensor<64xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = het.cross_entropy %l, %y : tensor<64x10xf32>, tensor<64xf32> -> tensor<f32>
  return
}

// -----

func.func @ce_grad_type(%d: tensor<f64>, %l: tensor<64x10xf32>, %y: tensor<64xi64>) {
  // expected-error @+2 {{grad_loss and logits must have the same element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.cross_entropy_grad %d, %l, %y : tensor<f64>, tensor<64x10xf32>, tensor<64xi64> -> tensor<64x10xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<512xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{embedding table must be 2-D [V, D], got [512]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.embedding %t, %i : tensor<512xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_grad_table(%d: tensor<4x64xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'het.embedding_grad' op grad_table must be 2-D [V, D], got [64]}}
  %0 = het.embedding_grad %d, %i : tensor<4x64xf32>, tensor<4xi64> -> tensor<64xf32>
  return
}

// -----

func.func @embedding_grad_shape(%d: tensor<4x32xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'het.embedding_grad' op grad_output must be indices shape + [D] = [4, 64], got [4, 32]}}
  %0 = het.embedding_grad %d, %i : tensor<4x32xf32>, tensor<4xi64> -> tensor<512x64xf32>
  return
}

// -----

func.func @embedding_grad_type(%d: tensor<4x64xf32>, %i: tensor<4xi64>) {
  // expected-error @+1 {{'het.embedding_grad' op grad_output and grad_table must have the same element type}}
  %0 = het.embedding_grad %d, %i : tensor<4x64xf32>, tensor<4xi64> -> tensor<512x64xf16>
  return
}
