// RUN: het-opt %s --het-fuse="elementwise=false" --split-input-file | FileCheck %s
// RUN: het-opt %s --het-fuse="conv-bn-fold=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Inference: the batch norm folds into the convolution's filter and bias,
// computed from the parameters in the IR.
// CHECK-LABEL: func.func @fold(
// CHECK: %[[S:.*]] = het.elementwise %arg2, %arg5 {het.layer = 0 : i64}
// CHECK: math.rsqrt
// CHECK: %[[B:.*]] = het.elementwise %arg3, %arg4, %[[S]]
// CHECK: %[[COL:.*]] = het.reshape %[[S]] {het.layer = 0 : i64} : tensor<4xf32> -> tensor<4x1x1x1xf32>
// CHECK: %[[W:.*]] = het.mul %arg1, %[[COL]]
// CHECK: %[[Y:.*]] = het.conv2d %arg0, %[[W]], %[[B]] {het.layer = 0 : i64, padding = array<i64: 1, 1>}
// CHECK-NOT: het.batch_norm_inference
// CHECK: return %[[Y]]
// OFF-LABEL: func.func @fold(
// OFF: het.batch_norm_inference
func.func @fold(%x: tensor<2x3x5x5xf32>, %k: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %beta: tensor<4xf32>,
                %mean: tensor<4xf32>, %var: tensor<4xf32>) -> tensor<2x4x5x5xf32> {
  %c = het.conv2d %x, %k {padding = array<i64: 1, 1>, het.layer = 0 : i64} : tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x5x5xf32>
  %y = het.batch_norm_inference %c, %g, %beta, %mean, %var {het.layer = 0 : i64} : tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x5x5xf32>
  return %y : tensor<2x4x5x5xf32>
}

// -----

// A convolution that already has a bias keeps it, shifted.
// CHECK-LABEL: func.func @fold_with_bias(
// CHECK: het.elementwise %arg4, %arg5, %{{.*}}, %arg2 :
// CHECK: het.conv2d %arg0, %{{.*}}, %{{.*}} :
// CHECK-NOT: het.batch_norm_inference
func.func @fold_with_bias(%x: tensor<2x3x5x5xf32>, %k: tensor<4x3x3x3xf32>, %cb: tensor<4xf32>, %g: tensor<4xf32>,
                          %beta: tensor<4xf32>, %mean: tensor<4xf32>, %var: tensor<4xf32>) -> tensor<2x4x3x3xf32> {
  %c = het.conv2d %x, %k, %cb : tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x3x3xf32>
  %y = het.batch_norm_inference %c, %g, %beta, %mean, %var : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x3xf32>
  return %y : tensor<2x4x3x3xf32>
}

// -----

// Negative: the convolution's output is also used elsewhere.
// CHECK-LABEL: func.func @conv_escapes(
// CHECK: het.batch_norm_inference
func.func @conv_escapes(%x: tensor<2x3x5x5xf32>, %k: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %beta: tensor<4xf32>,
                        %mean: tensor<4xf32>, %var: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
  %c = het.conv2d %x, %k : tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x3x3xf32>
  %y = het.batch_norm_inference %c, %g, %beta, %mean, %var : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x3xf32>
  return %y, %c : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
}
