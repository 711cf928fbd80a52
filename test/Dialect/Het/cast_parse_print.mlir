// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @formats
func.func @formats(%x: tensor<4x8xf32>, %h: tensor<?x8xf16>) -> tensor<4x8xf64> {
  // CHECK: het.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xbf16>
  %0 = het.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  // CHECK: het.cast %{{.*}} : tensor<4x8xbf16> -> tensor<4x8xf64>
  %1 = het.cast %0 : tensor<4x8xbf16> -> tensor<4x8xf64>
  // CHECK: het.cast %{{.*}} : tensor<?x8xf16> -> tensor<?x8xf32>
  %2 = het.cast %h : tensor<?x8xf16> -> tensor<?x8xf32>
  return %1 : tensor<4x8xf64>
}
