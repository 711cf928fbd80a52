// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<8x16x4x4xf32>) -> tensor<16xf32> {
  // CHECK: het.reduce_sum %{{.*}} {axes = array<i64: 0, 2, 3>} : tensor<8x16x4x4xf32> -> tensor<16xf32>
  %0 = het.reduce_sum %x {axes = array<i64: 0, 2, 3>} : tensor<8x16x4x4xf32> -> tensor<16xf32>
  // CHECK: het.reduce_mean %{{.*}} {axes = array<i64: -1>, keep_dims} : tensor<8x16x4x4xf32> -> tensor<8x16x4x1xf32>
  %1 = het.reduce_mean %x {axes = array<i64: -1>, keep_dims} : tensor<8x16x4x4xf32> -> tensor<8x16x4x1xf32>
  // CHECK: het.sum_to_shape %{{.*}} : tensor<8x16x4x1xf32> -> tensor<16x1x1xf32>
  %2 = het.sum_to_shape %1 : tensor<8x16x4x1xf32> -> tensor<16x1x1xf32>
  return %0 : tensor<16xf32>
}

// CHECK-LABEL: func @layout
func.func @layout(%x: tensor<4x16x64xf32>, %d: tensor<?x64xf32>) -> tensor<4x4x16x16xf32> {
  // CHECK: het.reshape %{{.*}} : tensor<4x16x64xf32> -> tensor<4x16x4x16xf32>
  %0 = het.reshape %x : tensor<4x16x64xf32> -> tensor<4x16x4x16xf32>
  // CHECK: het.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<4x16x4x16xf32> -> tensor<4x4x16x16xf32>
  %1 = het.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<4x16x4x16xf32> -> tensor<4x4x16x16xf32>
  // Dynamic sizes are allowed where the element count cannot be checked.
  // CHECK: het.reshape %{{.*}} : tensor<?x64xf32> -> tensor<?x8x8xf32>
  %2 = het.reshape %d : tensor<?x64xf32> -> tensor<?x8x8xf32>
  return %1 : tensor<4x4x16x16xf32>
}
