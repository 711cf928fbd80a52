// RUN: het-opt %s --het-fuse="elementwise=false" --split-input-file | FileCheck %s
// RUN: het-opt %s --het-fuse="linear-activation=false elementwise=false" --split-input-file | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @relu(
// CHECK: %[[Y:.*]] = het.linear %arg0, %arg1, %arg2 {activation = #het.activation<relu>, het.layer = 2 : i64}
// CHECK-NEXT: return %[[Y]]
// OFF-LABEL: func.func @relu(
// OFF: het.relu
func.func @relu(%x: tensor<8x4xf32>, %w: tensor<6x4xf32>, %b: tensor<6xf32>) -> tensor<8x6xf32> {
  %h = het.linear %x, %w, %b {het.layer = 2 : i64} : tensor<8x4xf32>, tensor<6x4xf32>, tensor<6xf32> -> tensor<8x6xf32>
  %y = het.relu %h {het.layer = 2 : i64} : tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}

// -----

// matmul by an [out, in] weight plus a bias, then gelu: one het.linear.
// CHECK-LABEL: func.func @matmul_bias_gelu(
// CHECK: %[[Y:.*]] = het.linear %arg0, %arg1, %arg2 {activation = #het.activation<gelu>}
// CHECK-NEXT: return %[[Y]]
func.func @matmul_bias_gelu(%x: tensor<2x8x4xf32>, %w: tensor<6x4xf32>, %b: tensor<6xf32>) -> tensor<2x8x6xf32> {
  %m = het.matmul %x, %w {transpose_rhs} : tensor<2x8x4xf32>, tensor<6x4xf32> -> tensor<2x8x6xf32>
  %h = het.add %m, %b : tensor<2x8x6xf32>, tensor<6xf32> -> tensor<2x8x6xf32>
  %y = het.gelu %h : tensor<2x8x6xf32>
  return %y : tensor<2x8x6xf32>
}

// -----

// In a training step the relu's gradient reads the fused output instead.
// CHECK-LABEL: func.func @relu_training(
// CHECK: %[[Y:.*]] = het.linear %arg0, %arg1 {activation = #het.activation<relu>}
// CHECK: het.relu_grad %arg2, %[[Y]]
func.func @relu_training(%x: tensor<8x4xf32>, %w: tensor<6x4xf32>, %dy: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>) {
  %h = het.linear %x, %w : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %y = het.relu %h : tensor<8x6xf32>
  %dh = het.relu_grad %dy, %h : tensor<8x6xf32>
  return %y, %dh : tensor<8x6xf32>, tensor<8x6xf32>
}

// -----

// Negative: gelu's gradient needs the pre-activation.
// CHECK-LABEL: func.func @gelu_training(
// CHECK: het.linear %arg0, %arg1 :
// CHECK: het.gelu
func.func @gelu_training(%x: tensor<8x4xf32>, %w: tensor<6x4xf32>, %dy: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>) {
  %h = het.linear %x, %w : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %y = het.gelu %h : tensor<8x6xf32>
  %dh = het.gelu_grad %dy, %h : tensor<8x6xf32>
  return %y, %dh : tensor<8x6xf32>, tensor<8x6xf32>
}

// -----

// Negative: the matmul's weight is [in, out] (no transpose_rhs), and a
// product that is used twice.
// CHECK-LABEL: func.func @not_linear(
// CHECK-COUNT-2: het.matmul
// CHECK-NOT: het.linear
func.func @not_linear(%x: tensor<8x4xf32>, %w: tensor<4x6xf32>, %v: tensor<6x4xf32>, %b: tensor<6xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>) {
  %m = het.matmul %x, %w : tensor<8x4xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %h = het.add %m, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>
  %n = het.matmul %x, %v {transpose_rhs} : tensor<8x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %k = het.add %n, %b : tensor<8x6xf32>, tensor<6xf32> -> tensor<8x6xf32>
  return %h, %k, %n : tensor<8x6xf32>, tensor<8x6xf32>, tensor<8x6xf32>
}
