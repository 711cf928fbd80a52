// RUN: het-opt %s --het-channel-blocked-activations | FileCheck %s
// RUN: het-opt %s --het-channel-blocked-activations --convert-het-to-linalg | FileCheck %s --check-prefix=META

// conv -> BN+ReLU -> max pool -> conv: the activations between the calls
// stay blocked; the network input (an argument), the 8-channel conv output
// (not a multiple of 16) and what the generated code reads (the ReLU's
// input, the returned tensor) stay row-major.
// CHECK-LABEL: func.func @chain
func.func @chain(%x: tensor<2x3x8x8xf32>, %k1: tensor<16x3x3x3xf32>, %g: tensor<16xf32>,
                 %b: tensor<16xf32>, %k2: tensor<16x16x3x3xf32>, %k3: tensor<8x16x3x3xf32>)
    -> (tensor<2x16x4x4xf32>, tensor<2x8x4x4xf32>) {
  // CHECK: het.conv2d {{.*}}hetrt.channel_blocked = array<i1: false, false, true>
  %y = het.conv2d %x, %k1 {padding = array<i64: 1, 1>}
      : tensor<2x3x8x8xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x8x8xf32>
  // CHECK: het.batch_norm_relu {{.*}}hetrt.channel_blocked = array<i1: true, false, false, true, false, false>
  %r, %m, %s = het.batch_norm_relu %y, %g, %b
      : tensor<2x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>
     -> tensor<2x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: het.max_pool2d {{.*}}hetrt.channel_blocked = array<i1: true, true>
  %p = het.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : tensor<2x16x8x8xf32> -> tensor<2x16x4x4xf32>
  // CHECK: het.conv2d {{.*}}hetrt.channel_blocked = array<i1: true, false, false>
  %z = het.conv2d %p, %k2 {padding = array<i64: 1, 1>}
      : tensor<2x16x4x4xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x4x4xf32>
  // The 8-channel output is not marked; its input is.
  // CHECK: het.conv2d {{.*}}hetrt.channel_blocked = array<i1: true, false, false>
  %e = het.conv2d %p, %k3 {padding = array<i64: 1, 1>}
      : tensor<2x16x4x4xf32>, tensor<8x16x3x3xf32> -> tensor<2x8x4x4xf32>
  // CHECK: het.relu
  %o = het.relu %z : tensor<2x16x4x4xf32>
  return %o, %e : tensor<2x16x4x4xf32>, tensor<2x8x4x4xf32>
}

// In the meta words, a marked buffer's rank word is 4 + 2^32.
// META-LABEL: memref.global "private" constant @__hetrt_meta_0
// META-SAME: dense<[2, 1, 4, 2, 3, 8, 8, 4, 16, 3, 3, 3, 4294967300, 2, 16, 8, 8,

// Generated kernels read row-major buffers: nothing is marked there.
// CHECK-LABEL: func.func @generated
// CHECK-NOT: hetrt.channel_blocked
func.func @generated(%x: tensor<2x16x8x8xf32>, %k: tensor<16x16x3x3xf32>) -> tensor<2x16x4x4xf32>
    attributes {het.kernel_library = "mlir"} {
  %y = het.conv2d %x, %k {padding = array<i64: 1, 1>}
      : tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32> -> tensor<2x16x8x8xf32>
  %p = het.max_pool2d %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : tensor<2x16x8x8xf32> -> tensor<2x16x4x4xf32>
  return %p : tensor<2x16x4x4xf32>
}
