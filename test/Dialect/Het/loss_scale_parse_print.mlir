// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @scaling
func.func @scaling(%scale: tensor<f32>, %dw: tensor<4x8xf32>, %db: tensor<4xf32>, %w: tensor<4x8xf32>,
                   %w1: tensor<4x8xf32>, %step: tensor<i64>, %ratio: tensor<f32>, %count: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<i64>, tensor<f32>, tensor<f32>) {
  // CHECK: %[[INF:.*]], %{{.*}}:2 = het.unscale_gradients %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<f32>, tensor<4x8xf32>, tensor<4xf32>
  %inf, %g:2 = het.unscale_gradients %scale, %dw, %db : tensor<f32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<f32>, tensor<4x8xf32>, tensor<4xf32>
  // CHECK: het.select %[[INF]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x8xf32>
  %kept = het.select %inf, %w, %w1 : tensor<f32>, tensor<4x8xf32>
  // CHECK: het.select %[[INF]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<i64>
  %s = het.select %inf, %step, %step : tensor<f32>, tensor<i64>
  // CHECK: het.loss_scale_update %[[INF]], %{{.*}}, %{{.*}} {growth_interval = 5 : i64, init_scale = 0x4170000000000000 : f64} : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>
  %r, %c = het.loss_scale_update %inf, %ratio, %count {init_scale = 16777216.0 : f64, growth_interval = 5 : i64} : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>
  return %kept, %s, %r, %c : tensor<4x8xf32>, tensor<i64>, tensor<f32>, tensor<f32>
}
