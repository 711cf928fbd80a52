// RUN: het-opt %s --het-buffer-entry-signatures | FileCheck %s

// An entry function (public, referred to by nothing in the module) takes
// its tensors as buffers and writes its tensor results to out-parameters
// after the inputs, in result order, keeping their attributes: the
// signature buffer-results-to-out-params gives it after One-Shot
// Bufferize, which then has no tensor arguments and results to pair.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W:[a-z0-9]+]]: memref<4xf32> {my.tag = 1 : i64}, %[[X:[a-z0-9]+]]: memref<4xf32>, %[[N:[a-z0-9]+]]: i64,
// CHECK-SAME: %[[OUTW:[a-z0-9]+]]: memref<4xf32> {my.name = "w"}, %[[OUTL:[a-z0-9]+]]: memref<f32>) -> i64 {
// CHECK-DAG: %[[TW:.*]] = bufferization.to_tensor %[[W]] restrict writable : memref<4xf32>
// CHECK-DAG: %[[TX:.*]] = bufferization.to_tensor %[[X]] restrict writable : memref<4xf32>
// CHECK: %[[NEW:.*]] = het.add %[[TW]], %[[TX]]
// CHECK: %[[LOSS:.*]] = het.reduce_sum
// CHECK: bufferization.materialize_in_destination %[[NEW]] in restrict writable %[[OUTW]]
// CHECK: bufferization.materialize_in_destination %[[LOSS]] in restrict writable %[[OUTL]]
// CHECK: return %[[N]] : i64
func.func @step(%w: tensor<4xf32> {my.tag = 1 : i64}, %x: tensor<4xf32>, %n: i64)
    -> (tensor<4xf32> {my.name = "w"}, tensor<f32>, i64) {
  %0 = het.add %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = het.reduce_sum %0 {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
  return %0, %1, %n : tensor<4xf32>, tensor<f32>, i64
}

// Private functions, functions something calls and dynamic shapes are left
// to One-Shot.
// CHECK-LABEL: func.func private @layer(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// CHECK-LABEL: func.func @called(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
func.func @called(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
// CHECK-LABEL: func.func @caller(
// CHECK-SAME: memref<4xf32>
func.func @caller(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @called(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
// CHECK-LABEL: func.func @dynamic(%{{.*}}: tensor<?xf32>) -> tensor<?xf32>
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
