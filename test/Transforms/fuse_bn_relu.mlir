// RUN: het-opt %s --het-fuse --split-input-file | FileCheck %s
// RUN: het-opt %s --het-fuse="bn-relu=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Forward: the batch norm's output feeds only the relu.
// CHECK-LABEL: func.func @forward(
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = het.batch_norm_relu %arg0, %arg1, %arg2 {het.layer = 3 : i64}
// CHECK-NOT: het.relu
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @forward(
// OFF: het.batch_norm %
// OFF: het.relu
func.func @forward(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
  %y, %m, %s = het.batch_norm %x, %g, %b {het.layer = 3 : i64} : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
  %r = het.relu %y {het.layer = 3 : i64} : tensor<2x3x4x4xf32>
  return %r : tensor<2x3x4x4xf32>
}

// -----

// Training step: relu_grad + batch_norm_grad become one fused gradient that
// reads the relu mask from the fused op's output.
// CHECK-LABEL: func.func @training(
// CHECK: %[[Y:.*]], %[[M:.*]], %[[S:.*]] = het.batch_norm_relu %arg0, %arg1, %arg2
// CHECK-NOT: het.relu_grad
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = het.batch_norm_relu_grad %arg3, %[[Y]], %arg0, %arg1, %[[M]], %[[S]]
// CHECK: return %[[Y]], %[[DX]], %[[DG]], %[[DB]]
func.func @training(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %dr: tensor<2x3x4x4xf32>)
    -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
  %r = het.relu %y : tensor<2x3x4x4xf32>
  %dy = het.relu_grad %dr, %y : tensor<2x3x4x4xf32>
  %dx, %dg, %db = het.batch_norm_grad %dy, %x, %g, %m, %s : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
  return %r, %dx, %dg, %db : tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Negative: the pre-relu output is also returned, so it must exist.
// CHECK-LABEL: func.func @output_escapes(
// CHECK: het.batch_norm %
// CHECK: het.relu
// CHECK-NOT: het.batch_norm_relu
func.func @output_escapes(%x: tensor<4x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %r = het.relu %y : tensor<4x3xf32>
  return %r, %y : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Negative: the relu gradient also feeds something other than this batch
// norm's gradient.
// CHECK-LABEL: func.func @mask_escapes(
// CHECK-NOT: het.batch_norm_relu
func.func @mask_escapes(%x: tensor<4x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %dr: tensor<4x3xf32>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %r = het.relu %y : tensor<4x3xf32>
  %dy = het.relu_grad %dr, %y : tensor<4x3xf32>
  %dx, %dg, %db = het.batch_norm_grad %dy, %x, %g, %m, %s : tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  return %r, %dx, %dy : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Negative: two relus read the output.
// CHECK-LABEL: func.func @two_relus(
// CHECK-NOT: het.batch_norm_relu
func.func @two_relus(%x: tensor<4x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %r1 = het.relu %y : tensor<4x3xf32>
  %r2 = het.relu %y {het.layer = 1 : i64} : tensor<4x3xf32>
  return %r1, %r2 : tensor<4x3xf32>, tensor<4x3xf32>
}
