// RUN: het-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func @relu_relu
// CHECK-NEXT: %[[R:.*]] = het.relu %arg0
// CHECK-NEXT: return %[[R]]
func.func @relu_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = het.relu %x : tensor<4xf32>
  %1 = het.relu %0 : tensor<4xf32>
  %2 = het.relu %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// A relu of something else is kept.
// CHECK-LABEL: func @relu_gelu
// CHECK: het.gelu
// CHECK: het.relu
func.func @relu_gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = het.gelu %x : tensor<4xf32>
  %1 = het.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @reshapes
// CHECK-NEXT: %[[R:.*]] = het.reshape %arg0 : tensor<4x8xf32> -> tensor<32xf32>
// CHECK-NEXT: return %arg0, %[[R]]
func.func @reshapes(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<32xf32>) {
  %same = het.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = het.reshape %x : tensor<4x8xf32> -> tensor<2x16xf32>
  %b = het.reshape %a : tensor<2x16xf32> -> tensor<32xf32>
  return %same, %b : tensor<4x8xf32>, tensor<32xf32>
}

// -----

// CHECK-LABEL: func @transposes
// CHECK-NEXT: %[[T:.*]] = het.transpose %arg0 {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %arg0, %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %id = het.transpose %x {permutation = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %a = het.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %b = het.transpose %a {permutation = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  %c = het.transpose %a {permutation = array<i64: 1, 0, 2>} : tensor<3x2x4xf32> -> tensor<2x3x4xf32>
  %d = het.add %c, %id : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %id, %b : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func @transpose_roundtrip
// CHECK-NEXT: return %arg0
func.func @transpose_roundtrip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = het.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %b = het.transpose %a {permutation = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @sum_to_same_shape
// CHECK-NEXT: return %arg0
func.func @sum_to_same_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = het.sum_to_shape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}

// -----

// Unused pure ops disappear.
// CHECK-LABEL: func @dead
// CHECK-NEXT: return
func.func @dead(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) {
  %a = het.linear %x, %w : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
  return
}
