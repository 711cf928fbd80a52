// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @linear
func.func @linear(%x: tensor<64x784xf32>, %w: tensor<256x784xf32>, %b: tensor<256xf32>,
                  %x3: tensor<4x16x784xf32>) -> tensor<64x256xf32> {
  // CHECK: het.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x784xf32>, tensor<256x784xf32>, tensor<256xf32> -> tensor<64x256xf32>
  %0 = het.linear %x, %w, %b : tensor<64x784xf32>, tensor<256x784xf32>, tensor<256xf32> -> tensor<64x256xf32>
  // CHECK: het.linear %{{.*}}, %{{.*}} : tensor<64x784xf32>, tensor<256x784xf32> -> tensor<64x256xf32>
  %1 = het.linear %x, %w : tensor<64x784xf32>, tensor<256x784xf32> -> tensor<64x256xf32>
  // CHECK: het.linear {{.*}} {activation = #het.activation<relu>} : tensor<4x16x784xf32>, tensor<256x784xf32>, tensor<256xf32> -> tensor<4x16x256xf32>
  %2 = het.linear %x3, %w, %b {activation = #het.activation<relu>} : tensor<4x16x784xf32>, tensor<256x784xf32>, tensor<256xf32> -> tensor<4x16x256xf32>
  return %0 : tensor<64x256xf32>
}

// CHECK-LABEL: func @linear_grad
func.func @linear_grad(%dy: tensor<4x16x256xf32>, %x: tensor<4x16x784xf32>, %w: tensor<256x784xf32>) -> tensor<256x784xf32> {
  // CHECK: %grad_input, %grad_weight, %grad_bias = het.linear_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x16x256xf32>, tensor<4x16x784xf32>, tensor<256x784xf32> -> tensor<4x16x784xf32>, tensor<256x784xf32>, tensor<256xf32>
  %dx, %dw, %db = het.linear_grad %dy, %x, %w : tensor<4x16x256xf32>, tensor<4x16x784xf32>, tensor<256x784xf32> -> tensor<4x16x784xf32>, tensor<256x784xf32>, tensor<256xf32>
  return %dw : tensor<256x784xf32>
}

// CHECK-LABEL: func @matmul
func.func @matmul(%q: tensor<2x4x16x32xf32>, %k: tensor<2x4x16x32xf32>, %m: tensor<32x8xf32>) -> tensor<2x4x16x16xf32> {
  // CHECK: het.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32> -> tensor<2x4x16x16xf32>
  %s = het.matmul %q, %k {transpose_rhs} : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32> -> tensor<2x4x16x16xf32>
  // CHECK: het.matmul %{{.*}}, %{{.*}} : tensor<2x4x16x32xf32>, tensor<32x8xf32> -> tensor<2x4x16x8xf32>
  %p = het.matmul %q, %m : tensor<2x4x16x32xf32>, tensor<32x8xf32> -> tensor<2x4x16x8xf32>
  // CHECK: het.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32> -> tensor<2x4x32x32xf32>
  %t = het.matmul %q, %k {transpose_lhs} : tensor<2x4x16x32xf32>, tensor<2x4x16x32xf32> -> tensor<2x4x32x32xf32>
  return %s : tensor<2x4x16x16xf32>
}
