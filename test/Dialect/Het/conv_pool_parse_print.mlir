// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @conv
func.func @conv(%x: tensor<8x4x32x32xf32>, %w: tensor<16x4x3x3xf32>, %b: tensor<16xf32>, %wg: tensor<16x2x3x3xf32>) -> tensor<8x16x32x32xf32> {
  // CHECK: het.conv2d %{{.*}}, %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>} : tensor<8x4x32x32xf32>, tensor<16x4x3x3xf32>, tensor<16xf32> -> tensor<8x16x32x32xf32>
  %0 = het.conv2d %x, %w, %b {padding = array<i64: 1, 1>} : tensor<8x4x32x32xf32>, tensor<16x4x3x3xf32>, tensor<16xf32> -> tensor<8x16x32x32xf32>
  // CHECK: het.conv2d %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>} : tensor<8x4x32x32xf32>, tensor<16x4x3x3xf32> -> tensor<8x16x15x15xf32>
  %1 = het.conv2d %x, %w {strides = array<i64: 2, 2>} : tensor<8x4x32x32xf32>, tensor<16x4x3x3xf32> -> tensor<8x16x15x15xf32>
  // CHECK: het.conv2d %{{.*}}, %{{.*}} {dilation = array<i64: 2, 2>, groups = 2 : i64} : tensor<8x4x32x32xf32>, tensor<16x2x3x3xf32> -> tensor<8x16x28x28xf32>
  %2 = het.conv2d %x, %wg {dilation = array<i64: 2, 2>, groups = 2 : i64} : tensor<8x4x32x32xf32>, tensor<16x2x3x3xf32> -> tensor<8x16x28x28xf32>
  // Default-valued attributes are not printed.
  // CHECK: het.conv2d %{{.*}}, %{{.*}} : tensor<8x4x32x32xf32>, tensor<16x4x3x3xf32> -> tensor<8x16x30x30xf32>
  %3 = het.conv2d %x, %w {strides = array<i64: 1, 1>, groups = 1 : i64} : tensor<8x4x32x32xf32>, tensor<16x4x3x3xf32> -> tensor<8x16x30x30xf32>
  return %0 : tensor<8x16x32x32xf32>
}

// CHECK-LABEL: func @conv_grads
func.func @conv_grads(%dy: tensor<8x16x32x32xf32>, %x: tensor<8x4x32x32xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<16x4x3x3xf32> {
  // CHECK: het.conv2d_grad_input %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32>, tensor<16x4x3x3xf32> -> tensor<8x4x32x32xf32>
  %dx = het.conv2d_grad_input %dy, %w {padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32>, tensor<16x4x3x3xf32> -> tensor<8x4x32x32xf32>
  // CHECK: het.conv2d_grad_filter %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32>, tensor<8x4x32x32xf32> -> tensor<16x4x3x3xf32>
  %dw = het.conv2d_grad_filter %dy, %x {padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32>, tensor<8x4x32x32xf32> -> tensor<16x4x3x3xf32>
  return %dw : tensor<16x4x3x3xf32>
}

// CHECK-LABEL: func @pool
func.func @pool(%x: tensor<8x16x32x32xf32>, %dy: tensor<8x16x16x16xf32>, %dg: tensor<8x16x1x1xf32>) -> tensor<8x16x32x32xf32> {
  // CHECK: het.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
  %0 = het.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x32x32xf32> -> tensor<8x16x16x16xf32>
  // CHECK: het.avg_pool2d %{{.*}} {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, strides = array<i64: 1, 1>} : tensor<8x16x32x32xf32> -> tensor<8x16x32x32xf32>
  %1 = het.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1>} : tensor<8x16x32x32xf32> -> tensor<8x16x32x32xf32>
  // CHECK: het.max_pool2d_grad
  %2 = het.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x16x16x16xf32>, tensor<8x16x32x32xf32> -> tensor<8x16x32x32xf32>
  // CHECK: het.avg_pool2d_grad %{{.*}} {kernel = array<i64: 32, 32>, strides = array<i64: 32, 32>} : tensor<8x16x1x1xf32> -> tensor<8x16x32x32xf32>
  %3 = het.avg_pool2d_grad %dg {kernel = array<i64: 32, 32>, strides = array<i64: 32, 32>} : tensor<8x16x1x1xf32> -> tensor<8x16x32x32xf32>
  return %2 : tensor<8x16x32x32xf32>
}
