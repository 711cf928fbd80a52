// RUN: het-opt %s --het-fuse-attention --split-input-file | FileCheck %s

// q k^T -> causal, scaled softmax -> p v: one het.attention carrying the
// softmax's attributes and the output matmul's layer.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x16x8xf32>, %[[V:.*]]: tensor<2x4x16x8xf32>)
// CHECK-NEXT: %[[O:.*]] = het.attention %[[Q]], %[[K]], %[[V]] {causal, het.layer = 2 : i64, scale = 0.35355339059327373 : f64}
// CHECK-NEXT: return %[[O]]
func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = het.matmul %q, %k {transpose_rhs, het.layer = 2 : i64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
  %p = het.softmax %s {causal, scale = 0.35355339059327373 : f64, het.layer = 2 : i64} : tensor<2x4x16x16xf32>
  %o = het.matmul %p, %v {het.layer = 2 : i64} : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// The key transposed by het.transpose (PyTorch's q @ k.transpose(-2, -1)):
// the transpose goes too when nothing else reads it.
// CHECK-LABEL: func.func @transposed_key(
// CHECK-NOT: het.transpose
// CHECK: het.attention %arg0, %arg1, %arg2 : tensor<3x10x4xf32>, tensor<3x12x4xf32>, tensor<3x12x5xf32> -> tensor<3x10x5xf32>
// CHECK-NOT: het.transpose
func.func @transposed_key(%q: tensor<3x10x4xf32>, %k: tensor<3x12x4xf32>, %v: tensor<3x12x5xf32>) -> tensor<3x10x5xf32> {
  %kt = het.transpose %k {permutation = array<i64: 0, 2, 1>} : tensor<3x12x4xf32> -> tensor<3x4x12xf32>
  %s = het.matmul %q, %kt : tensor<3x10x4xf32>, tensor<3x4x12xf32> -> tensor<3x10x12xf32>
  %p = het.softmax %s : tensor<3x10x12xf32>
  %o = het.matmul %p, %v : tensor<3x10x12xf32>, tensor<3x12x5xf32> -> tensor<3x10x5xf32>
  return %o : tensor<3x10x5xf32>
}

// -----

// Imported torch.bmm attention (transformers' GPT-2): the matmuls work in
// [batch * heads, T, D], the softmax in [batch, heads, T, T]; the key was
// transposed before it was regrouped. The fused op works in the matmuls'
// frame, the key is regrouped untransposed, and the reshapes and the
// transpose around the softmax go.
// CHECK-LABEL: func.func @regrouped_heads(
// CHECK-SAME: %[[Q:.*]]: tensor<8x16x4xf32>, %[[K:.*]]: tensor<2x4x16x4xf32>, %[[V:.*]]: tensor<8x16x4xf32>)
// CHECK-NEXT: %[[K3:.*]] = het.reshape %[[K]] {het.layer = 3 : i64} : tensor<2x4x16x4xf32> -> tensor<8x16x4xf32>
// CHECK-NEXT: %[[O:.*]] = het.attention %[[Q]], %[[K3]], %[[V]] {causal, het.layer = 3 : i64, scale = 5.000000e-01 : f64} : tensor<8x16x4xf32>, tensor<8x16x4xf32>, tensor<8x16x4xf32> -> tensor<8x16x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @regrouped_heads(%q: tensor<8x16x4xf32>, %k: tensor<2x4x16x4xf32>, %v: tensor<8x16x4xf32>) -> tensor<8x16x4xf32> {
  %kt = het.transpose %k {permutation = array<i64: 0, 1, 3, 2>, het.layer = 3 : i64} : tensor<2x4x16x4xf32> -> tensor<2x4x4x16xf32>
  %kt3 = het.reshape %kt {het.layer = 3 : i64} : tensor<2x4x4x16xf32> -> tensor<8x4x16xf32>
  %s = het.matmul %q, %kt3 {het.layer = 3 : i64} : tensor<8x16x4xf32>, tensor<8x4x16xf32> -> tensor<8x16x16xf32>
  %s4 = het.reshape %s {het.layer = 3 : i64} : tensor<8x16x16xf32> -> tensor<2x4x16x16xf32>
  %p4 = het.softmax %s4 {causal, scale = 0.5 : f64, het.layer = 3 : i64} : tensor<2x4x16x16xf32>
  %p = het.reshape %p4 {het.layer = 3 : i64} : tensor<2x4x16x16xf32> -> tensor<8x16x16xf32>
  %o = het.matmul %p, %v {het.layer = 3 : i64} : tensor<8x16x16xf32>, tensor<8x16x4xf32> -> tensor<8x16x4xf32>
  return %o : tensor<8x16x4xf32>
}

// -----

// Reshapes that do more than regroup the leading dimensions are not looked
// through: here the softmax normalizes rows of 32 scores (two queries' rows
// at once), which is not attention over one query's keys.
// CHECK-LABEL: func.func @reshape_mixes_rows(
// CHECK-NOT: het.attention
// CHECK: het.softmax
func.func @reshape_mixes_rows(%q: tensor<8x16x4xf32>, %k: tensor<8x16x4xf32>, %v: tensor<8x16x4xf32>) -> tensor<8x16x4xf32> {
  %s = het.matmul %q, %k {transpose_rhs} : tensor<8x16x4xf32>, tensor<8x16x4xf32> -> tensor<8x16x16xf32>
  %s4 = het.reshape %s : tensor<8x16x16xf32> -> tensor<8x8x32xf32>
  %p4 = het.softmax %s4 : tensor<8x8x32xf32>
  %p = het.reshape %p4 : tensor<8x8x32xf32> -> tensor<8x16x16xf32>
  %o = het.matmul %p, %v : tensor<8x16x16xf32>, tensor<8x16x4xf32> -> tensor<8x16x4xf32>
  return %o : tensor<8x16x4xf32>
}

// -----

// The probabilities are returned too (attention weights a model outputs):
// they must exist, so nothing is fused.
// CHECK-LABEL: func.func @probabilities_used(
// CHECK-NOT: het.attention
// CHECK: het.softmax
func.func @probabilities_used(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x16xf32>) {
  %s = het.matmul %q, %k {transpose_rhs} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  %p = het.softmax %s : tensor<16x16xf32>
  %o = het.matmul %p, %v : tensor<16x16xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  return %o, %p : tensor<16x8xf32>, tensor<16x16xf32>
}

// -----

// Not attention: the softmax normalizes over the queries (axis 0), the
// key is not transposed, the value matrix is shared by a batch, or the
// scores have a second reader.
// CHECK-LABEL: func.func @not_attention(
// CHECK-NOT: het.attention
// CHECK: return
func.func @not_attention(%q: tensor<16x8xf32>, %k: tensor<16x8xf32>, %kt: tensor<8x16xf32>, %v: tensor<16x8xf32>,
                         %qb: tensor<2x16x8xf32>, %kb: tensor<2x16x8xf32>)
    -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>) {
  %s0 = het.matmul %q, %k {transpose_rhs} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  %p0 = het.softmax %s0 {axis = 0 : i64} : tensor<16x16xf32>
  %o0 = het.matmul %p0, %v : tensor<16x16xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %s1 = het.matmul %q, %kt : tensor<16x8xf32>, tensor<8x16xf32> -> tensor<16x16xf32>
  %p1 = het.softmax %s1 : tensor<16x16xf32>
  %o1 = het.matmul %p1, %v : tensor<16x16xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %s2 = het.matmul %qb, %kb {transpose_rhs} : tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x16xf32>
  %p2 = het.softmax %s2 : tensor<2x16x16xf32>
  %o2 = het.matmul %p2, %v : tensor<2x16x16xf32>, tensor<16x8xf32> -> tensor<2x16x8xf32>
  %s3 = het.matmul %q, %k {transpose_rhs} : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x16xf32>
  %p3 = het.softmax %s3 : tensor<16x16xf32>
  %o3 = het.matmul %p3, %v : tensor<16x16xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  return %o0, %o1, %o2, %o3, %s3 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<2x16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>
}

// -----

// In the training pipeline the fused op is differentiated by its own rule:
// the step keeps no probabilities, and the gradient recomputes them.
// RUN: het-opt %s --split-input-file --het-training-pipeline="optimizer=none fuse-attention=true" | FileCheck %s --check-prefix=STEP
// RUN: het-opt %s --split-input-file --het-training-pipeline="optimizer=none" | FileCheck %s --check-prefix=UNFUSED
// STEP-LABEL: func.func @tiny_train_step(
// STEP-NOT: het.softmax
// STEP: %[[O:.*]] = het.attention %{{.*}}, %{{.*}}, %{{.*}} {causal
// STEP-NOT: het.softmax
// STEP: het.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]] {causal
// UNFUSED-LABEL: func.func @tiny_train_step(
// UNFUSED-NOT: het.attention
// UNFUSED: het.softmax_grad
func.func @tiny(%x: tensor<2x6x4xf32>, %wq: tensor<4x4xf32> {het.param}, %wv: tensor<4x4xf32> {het.param}) -> tensor<f32> {
  %q = het.linear %x, %wq : tensor<2x6x4xf32>, tensor<4x4xf32> -> tensor<2x6x4xf32>
  %v = het.linear %x, %wv : tensor<2x6x4xf32>, tensor<4x4xf32> -> tensor<2x6x4xf32>
  %s = het.matmul %q, %x {transpose_rhs} : tensor<2x6x4xf32>, tensor<2x6x4xf32> -> tensor<2x6x6xf32>
  %p = het.softmax %s {causal} : tensor<2x6x6xf32>
  %o = het.matmul %p, %v : tensor<2x6x6xf32>, tensor<2x6x4xf32> -> tensor<2x6x4xf32>
  %l = het.reduce_sum %o {axes = array<i64: 0, 1, 2>} : tensor<2x6x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
