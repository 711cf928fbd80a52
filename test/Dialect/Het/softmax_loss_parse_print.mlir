// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @softmax
func.func @softmax(%s: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  // CHECK: het.softmax %{{.*}} : tensor<2x4x16x16xf32>
  %0 = het.softmax %s : tensor<2x4x16x16xf32>
  // CHECK: het.softmax %{{.*}} {causal, scale = 1.250000e-01 : f64} : tensor<2x4x16x16xf32>
  %1 = het.softmax %s {causal, scale = 0.125 : f64} : tensor<2x4x16x16xf32>
  // CHECK: het.softmax %{{.*}} {axis = 1 : i64} : tensor<2x4x16x16xf32>
  %2 = het.softmax %s {axis = 1 : i64} : tensor<2x4x16x16xf32>
  // CHECK: het.softmax_grad %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : tensor<2x4x16x16xf32>
  %3 = het.softmax_grad %0, %1 {scale = 0.125 : f64} : tensor<2x4x16x16xf32>
  return %3 : tensor<2x4x16x16xf32>
}

// CHECK-LABEL: func @cross_entropy
func.func @cross_entropy(%logits: tensor<64x10xf32>, %labels: tensor<64xi64>, %seq: tensor<4x16x50xf64>, %tok: tensor<4x16xi32>) -> tensor<64x10xf32> {
  // CHECK: %[[L:.*]] = het.cross_entropy %{{.*}}, %{{.*}} : tensor<64x10xf32>, tensor<64xi64> -> tensor<f32>
  %loss = het.cross_entropy %logits, %labels : tensor<64x10xf32>, tensor<64xi64> -> tensor<f32>
  // CHECK: het.cross_entropy %{{.*}}, %{{.*}} : tensor<4x16x50xf64>, tensor<4x16xi32> -> tensor<f64>
  %l2 = het.cross_entropy %seq, %tok : tensor<4x16x50xf64>, tensor<4x16xi32> -> tensor<f64>
  // CHECK: het.cross_entropy_grad %[[L]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<64x10xf32>, tensor<64xi64> -> tensor<64x10xf32>
  %d = het.cross_entropy_grad %loss, %logits, %labels : tensor<f32>, tensor<64x10xf32>, tensor<64xi64> -> tensor<64x10xf32>
  return %d : tensor<64x10xf32>
}

// CHECK-LABEL: func @embedding
func.func @embedding(%table: tensor<512x64xf32>, %tokens: tensor<4x16xi64>) -> tensor<512x64xf32> {
  // CHECK: het.embedding %{{.*}}, %{{.*}} : tensor<512x64xf32>, tensor<4x16xi64> -> tensor<4x16x64xf32>
  %e = het.embedding %table, %tokens : tensor<512x64xf32>, tensor<4x16xi64> -> tensor<4x16x64xf32>
  // CHECK: het.embedding_grad %{{.*}}, %{{.*}} : tensor<4x16x64xf32>, tensor<4x16xi64> -> tensor<512x64xf32>
  %d = het.embedding_grad %e, %tokens : tensor<4x16x64xf32>, tensor<4x16xi64> -> tensor<512x64xf32>
  return %d : tensor<512x64xf32>
}
