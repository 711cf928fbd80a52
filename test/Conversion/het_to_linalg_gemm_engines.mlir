// RUN: het-opt %s --convert-het-to-linalg -split-input-file | FileCheck %s

// The engine of each matrix product (het-compile --tuning-db sets
// het.gemm_engines, a bit per product, 1 = OpenBLAS; het/Tune/GemmProducts.h)
// is the last meta word of the layer's kernel call; without the attribute
// it is 0 (oneDNN).
// CHECK-LABEL: func.func @forward
// CHECK: call @hetrt_dnnl_linear(
// CHECK: call @hetrt_dnnl_linear(
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<13xi64> = dense<[2, 1, 2, 8, 4, 2, 3, 4, 2, 8, 3, 0, 1]>
// CHECK-DAG: memref.global "private" constant @{{.*}} : memref<13xi64> = dense<[2, 1, 2, 8, 4, 2, 3, 4, 2, 8, 3, 0, 0]>
func.func @forward(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>) {
  %y = het.linear %x, %w {het.gemm_engines = 1 : i64} : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  %z = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y, %z : tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// dx on oneDNN, dw on OpenBLAS (bit 1); the word before it says dx is used.
// CHECK-LABEL: func.func @backward
// CHECK: call @hetrt_dnnl_linear_grad(
// CHECK: memref.global "private" constant @{{.*}} : memref<{{[0-9]+}}xi64> = dense<[3, 3, 2, 8, 3, 2, 8, 4, 2, 3, 4, 2, 8, 4, 2, 3, 4, 1, 3, 0, 2]>
func.func @backward(%dy: tensor<8x3xf32>, %x: tensor<8x4xf32>, %w: tensor<3x4xf32>)
    -> (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) {
  %dx, %dw, %db = het.linear_grad %dy, %x, %w {het.gemm_engines = 2 : i64}
      : tensor<8x3xf32>, tensor<8x4xf32>, tensor<3x4xf32>
     -> tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>
  return %dx, %dw, %db : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>
}
