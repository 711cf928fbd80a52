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

// CHECK-LABEL: func @rms_norm
func.func @rms_norm(%x: tensor<4x16x64xf32>, %g: tensor<64xf32>) -> tensor<4x16x64xf32> {
  // CHECK: %[[Y:.*]], %[[RSTD:.*]] = het.rms_norm %{{.*}}, %{{.*}} : tensor<4x16x64xf32>, tensor<64xf32> -> tensor<4x16x64xf32>, tensor<4x16xf32>
  %y, %r = het.rms_norm %x, %g : tensor<4x16x64xf32>, tensor<64xf32> -> tensor<4x16x64xf32>, tensor<4x16xf32>
  // CHECK: het.rms_norm_grad %[[Y]], %{{.*}}, %{{.*}}, %[[RSTD]] : {{.*}} -> tensor<4x16x64xf32>, tensor<64xf32>
  %dx, %dg = het.rms_norm_grad %y, %x, %g, %r : tensor<4x16x64xf32>, tensor<4x16x64xf32>, tensor<64xf32>, tensor<4x16xf32> -> tensor<4x16x64xf32>, tensor<64xf32>
  return %dx : tensor<4x16x64xf32>
}

// The default epsilon (1e-6) is not printed; another one is. Rank 1 has
// 0-d statistics, f64 works as f32 does.
// CHECK-LABEL: func @rms_norm_epsilon
func.func @rms_norm_epsilon(%x: tensor<64xf64>, %g: tensor<64xf64>) -> tensor<64xf64> {
  // CHECK: het.rms_norm %{{.*}}, %{{.*}} : tensor<64xf64>, tensor<64xf64> -> tensor<64xf64>, tensor<f64>
  %y, %r = het.rms_norm %x, %g {epsilon = 1.0e-6 : f64} : tensor<64xf64>, tensor<64xf64> -> tensor<64xf64>, tensor<f64>
  // CHECK: het.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64}
  %z, %s = het.rms_norm %y, %g {epsilon = 1.0e-5 : f64} : tensor<64xf64>, tensor<64xf64> -> tensor<64xf64>, tensor<f64>
  return %z : tensor<64xf64>
}

// Running statistics: the default momentum (0.1) is not printed; samples is
// set when the statistics cover a whole micro-batch over replicas.
// CHECK-LABEL: func @running_stats
func.func @running_stats(%x: tensor<8x16x4x4xf32>, %v: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  // CHECK: het.batch_norm_running_stats %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x4x4xf32> -> tensor<16xf32>, tensor<16xf32>
  %a, %b = het.batch_norm_running_stats %v, %v, %v, %v, %x : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x4x4xf32> -> tensor<16xf32>, tensor<16xf32>
  // CHECK: het.batch_norm_running_stats {{.*}} {momentum = 5.000000e-02 : f64, samples = 32 : i64}
  %c, %d = het.batch_norm_running_stats %a, %b, %v, %v, %x {momentum = 0.05 : f64, samples = 32 : i64} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16x4x4xf32> -> tensor<16xf32>, tensor<16xf32>
  return %c, %d : tensor<16xf32>, tensor<16xf32>
}
