// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @sgd
func.func @sgd(%w: tensor<64x64xf32>, %g: tensor<64x64xf32>, %buf: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // CHECK: %new_param, %new_momentum_buffer = het.sgd %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64} : tensor<64x64xf32>
  %w1, %b1 = het.sgd %w, %g, %buf {lr = 0.1 : f64, momentum = 0.0 : f64} : tensor<64x64xf32>
  // CHECK: het.sgd {{.*}} {lr = 1.000000e-02 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 5.000000e-04 : f64}
  %w2, %b2 = het.sgd %w1, %g, %b1 {lr = 0.01 : f64, momentum = 0.9 : f64, weight_decay = 5.0e-4 : f64, nesterov} : tensor<64x64xf32>
  return %w2 : tensor<64x64xf32>
}

// CHECK-LABEL: func @adam
func.func @adam(%w: tensor<64xbf16>, %g: tensor<64xbf16>, %m: tensor<64xbf16>, %v: tensor<64xbf16>, %step: tensor<i64>) -> tensor<64xbf16> {
  // CHECK: %new_param, %new_exp_avg, %new_exp_avg_sq = het.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-03 : f64} : tensor<64xbf16>, tensor<i64>
  %w1, %m1, %v1 = het.adam %w, %g, %m, %v, %step {lr = 1.0e-3 : f64} : tensor<64xbf16>, tensor<i64>
  // CHECK: het.adam {{.*}} {beta2 = {{.*}} : f64, decoupled, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-01 : f64}
  %w2, %m2, %v2 = het.adam %w1, %g, %m1, %v1, %step {lr = 1.0e-3 : f64, beta2 = 0.95 : f64, weight_decay = 0.1 : f64, decoupled} : tensor<64xbf16>, tensor<i64>
  return %w2 : tensor<64xbf16>
}
