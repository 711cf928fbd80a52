// RUN: het-opt %s --het-fuse --split-input-file | FileCheck %s
// RUN: het-opt %s --het-fuse="elementwise=false" --split-input-file | FileCheck %s --check-prefix=OFF

// A residual add, a scale and a relu: one pass over the data.
// CHECK-LABEL: func.func @chain(
// CHECK: %[[R:.*]] = het.elementwise %arg0, %arg1, %arg2 {het.layer = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[S]], %[[C]] : f32
// CHECK: %[[Y:.*]] = arith.maximumf %[[M]], %{{.*}} : f32
// CHECK-NEXT: het.yield %[[Y]] : f32
// CHECK: return %[[R]]
// OFF-LABEL: func.func @chain(
// OFF-NOT: het.elementwise
func.func @chain(%x: tensor<4x8xf32>, %res: tensor<4x8xf32>, %scale: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = het.add %x, %res {het.layer = 1 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %m = het.mul %s, %scale {het.layer = 1 : i64} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = het.relu %m {het.layer = 1 : i64} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Negative: the intermediate sum is also returned, so only mul+relu fuse.
// CHECK-LABEL: func.func @shared_intermediate(
// CHECK: %[[S:.*]] = het.add %arg0, %arg1
// CHECK: het.elementwise %[[S]], %arg2
// CHECK-NOT: arith.addf
// CHECK: return
func.func @shared_intermediate(%x: tensor<4x8xf32>, %res: tensor<4x8xf32>, %scale: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = het.add %x, %res : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %m = het.mul %s, %scale : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = het.relu %m : tensor<4x8xf32>
  return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Negative: a producer whose result is broadcast by its consumer would be
// recomputed for every use, so it is not fused.
// CHECK-LABEL: func.func @broadcast_producer(
// CHECK: het.relu %arg1
// CHECK: het.add
// CHECK-NOT: het.elementwise
func.func @broadcast_producer(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = het.relu %b : tensor<8xf32>
  %y = het.add %x, %r : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Backward chains fuse too: a relu gradient of a summed gradient; the same
// tensor used twice becomes one input.
// CHECK-LABEL: func.func @gradient_chain(
// CHECK: het.elementwise %arg0, %arg1, %arg2 :
// CHECK: arith.cmpf ogt
// CHECK: arith.select
func.func @gradient_chain(%d1: tensor<16xf32>, %d2: tensor<16xf32>, %x: tensor<16xf32>) -> tensor<16xf32> {
  %d = het.add %d1, %d2 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %g = het.relu_grad %d, %x : tensor<16xf32>
  %y = het.mul %g, %g : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %y : tensor<16xf32>
}
