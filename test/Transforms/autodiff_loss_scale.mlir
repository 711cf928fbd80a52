// RUN: het-opt %s --het-autodiff="optimizer=adam learning-rate=0.001 loss-scale=true init-scale=1024 growth-interval=10" | FileCheck %s
// RUN: not het-opt %s --het-autodiff="loss-scale=true backoff-factor=1.5" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: het-autodiff: loss scaling needs init-scale > 0, growth-factor > 1, 0 < backoff-factor < 1 and growth-interval >= 1

// Dynamic loss scaling (torch.amp.GradScaler): the scale is init-scale x
// the state amp.scale_ratio (which starts at 1); the backward starts from
// it; the gradients are unscaled before Adam; where any was inf or NaN every
// parameter, moment and the step count keep their old values; the scale is
// updated and returned with its growth count.
// CHECK-LABEL: func.func @model_train_step(
// CHECK-SAME: %[[W:[^:]*]]: tensor<3x4xf32> {het.param}, %[[RATIO:[^:]*]]: tensor<f32> {het.name = "amp.scale_ratio", het.state}, %[[COUNT:[^:]*]]: tensor<f32> {het.name = "amp.growth_tracker", het.state}, %[[STEP:[^:]*]]: tensor<i64> {het.name = "adam.step", het.state}, %[[M:[^:]*]]: tensor<3x4xf32> {het.name = "arg2.exp_avg", het.state}
// CHECK: %[[INIT:.*]] = arith.constant dense<1.024000e+03> : tensor<f32>
// CHECK: %[[SCALE:.*]] = het.mul %[[RATIO]], %[[INIT]]
// CHECK: het.cross_entropy_grad %[[SCALE]],
// CHECK: %[[FOUND:.*]], %[[G:.*]] = het.unscale_gradients %[[SCALE]], %{{.*}} : tensor<f32>, tensor<3x4xf32> -> tensor<f32>, tensor<3x4xf32>
// CHECK: %[[NEW:.*]], %[[NEWM:.*]], %{{.*}} = het.adam %[[W]], %[[G]], %[[M]]
// CHECK: %[[KEPT:.*]] = het.select %[[FOUND]], %[[W]], %[[NEW]] : tensor<f32>, tensor<3x4xf32>
// CHECK: het.select %[[FOUND]], %[[M]], %[[NEWM]]
// CHECK: %[[R:.*]], %[[C:.*]] = het.loss_scale_update %[[FOUND]], %[[RATIO]], %[[COUNT]] {growth_interval = 10 : i64, init_scale = 1.024000e+03 : f64}
// CHECK: %[[S:.*]] = het.select %[[FOUND]], %[[STEP]], %{{.*}} : tensor<f32>, tensor<i64>
// CHECK: return %{{.*}}, %[[KEPT]], {{.*}}, %[[R]], %[[C]], %[[S]]
func.func @model(%x: tensor<8x4xf32>, %labels: tensor<8xi64>, %w: tensor<3x4xf32> {het.param}) -> tensor<f32> {
  %y = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  %loss = het.cross_entropy %y, %labels : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
