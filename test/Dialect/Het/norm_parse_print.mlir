// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @batch_norm
func.func @batch_norm(%x: tensor<8x16x4x4xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16x4x4xf32>) -> tensor<8x16x4x4xf32> {
  // CHECK: %{{.*}}, %[[MEAN:.*]], %[[ISTD:.*]] = het.batch_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: het.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[MEAN]], %[[ISTD]]
  %dx, %dg, %db = het.batch_norm_grad %dy, %x, %g, %m, %s : tensor<8x16x4x4xf32>, tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: het.batch_norm_relu %{{.*}} {epsilon = 1.000000e-03 : f64}
  %yr, %mr, %sr = het.batch_norm_relu %x, %g, %b {epsilon = 1.0e-3 : f64} : tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: het.batch_norm_relu_grad
  %dxr, %dgr, %dbr = het.batch_norm_relu_grad %dy, %yr, %x, %g, %mr, %sr : tensor<8x16x4x4xf32>, tensor<8x16x4x4xf32>, tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: het.batch_norm_inference
  %yi = het.batch_norm_inference %x, %g, %b, %m, %s : tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>
  return %dx : tensor<8x16x4x4xf32>
}

// The default epsilon is not printed.
// CHECK-LABEL: func @batch_norm_2d
func.func @batch_norm_2d(%x: tensor<32x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<32x64xf32> {
  // CHECK: het.batch_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x64xf32>
  %y, %m, %s = het.batch_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>
  return %y : tensor<32x64xf32>
}

// CHECK-LABEL: func @layer_norm
func.func @layer_norm(%x: tensor<4x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<4x16x64xf32> {
  // CHECK: het.layer_norm {{.*}} -> tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  %y, %m, %r = het.layer_norm %x, %g, %b : tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<4x16x64xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  // CHECK: het.layer_norm_grad {{.*}} -> tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  %dx, %dg, %db = het.layer_norm_grad %y, %x, %g, %m, %r : tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<64xf32>, tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  return %dx : tensor<4x16x64xf32>
}
