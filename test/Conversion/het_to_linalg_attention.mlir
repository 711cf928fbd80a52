// RUN: het-opt %s --convert-het-to-linalg -split-input-file | FileCheck %s
// RUN: het-opt %s --convert-het-to-linalg="library=reference" -split-input-file | FileCheck %s --check-prefix=REF

// With oneDNN kernels attention and its gradient are one libhetrt call
// each; the meta words end with the scale (the bits of 0.125) and causal.
// CHECK-LABEL: func.func @step(
// CHECK: memref.get_global @[[FWD:[_a-z0-9]*]]
// CHECK: call @hetrt_dnnl_attention(
// CHECK: call @hetrt_dnnl_attention_grad(
// CHECK-NOT: hetrt_dnnl_matmul
// CHECK: memref.global "private" constant @[[FWD]] : memref<24xi64> = dense<[3, 1, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8, 4, 2, 4, 16, 8, 4593671619917905920, 1]>
// REF-LABEL: func.func @step(
// Without an attention kernel the ops it fused come back, and the gradient
// reads the forward's probabilities: two matmuls forward, four backward,
// one softmax and its gradient.
// REF-COUNT-6: call @hetrt_ref_matmul(
// REF-NOT: call @hetrt_ref_matmul(
// REF: return
func.func @step(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>)
    -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %o = het.attention %q, %k, %v {causal, scale = 0.125 : f64}
      : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  %dq, %dk, %dv = het.attention_grad %do, %q, %k, %v, %o {causal, scale = 0.125 : f64}
      : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>,
        tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return %o, %dq, %dk, %dv : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

// -----

// A gradient apart from its forward op (a layer's backward outlined on its
// own) computes the probabilities again: one more matmul.
// REF-LABEL: func.func @backward(
// REF-COUNT-5: call @hetrt_ref_matmul(
// REF-NOT: call @hetrt_ref_matmul(
// REF: return
func.func @backward(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>, %o: tensor<16x8xf32>, %do: tensor<16x8xf32>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  %dq, %dk, %dv = het.attention_grad %do, %q, %k, %v, %o
      : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
     -> tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
  return %dq, %dk, %dv : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
}
