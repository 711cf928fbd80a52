// RUN: het-opt %s --het-autodiff="optimizer=adam decoupled=true weight-decay=0.1 learning-rate=0.01 clip-grad-norm=0.5" | FileCheck %s
// RUN: not het-opt %s --het-autodiff="clip-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: het-autodiff: need learning-rate > 0, momentum >= 0, weight-decay >= 0, clip-grad-norm >= 0

// Gradient clipping (torch.nn.utils.clip_grad_norm_) before AdamW: the
// squared global norm of every parameter's gradient, then each gradient
// scaled by min(1, max_norm / (norm + 1e-6)); the updates read the clipped
// ones.
// CHECK-LABEL: func.func @model_train_step(
// CHECK: %[[SQ:.*]] = het.squared_norm %[[GW:[^,]*]], %[[GB:[^ ]*]] : tensor<3x4xf32>, tensor<3xf32> -> tensor<f32>
// CHECK: %[[C:.*]]:2 = het.clip_by_norm %[[SQ]], %[[GW]], %[[GB]] {max_norm = 5.000000e-01 : f64}
// CHECK: het.adam %{{.*}}, %[[C]]#0, {{.*}}decoupled{{.*}}weight_decay = 1.000000e-01
// CHECK: het.adam %{{.*}}, %[[C]]#1,

// The compiled step (het-compile) clips as het-eval's evaluator does.
// RUN: rm -rf %t && mkdir -p %t
// RUN: het-opt %s --het-autodiff="optimizer=sgd learning-rate=0.5 clip-grad-norm=0.05" -o %t/step.mlir
// RUN: het-eval %t/step.mlir --function model_train_step --random-inputs 3 --steps 10 > %t/ref
// RUN: het-compile %s --optimizer sgd --lr 0.5 --clip-grad-norm 0.05 -o %t/model
// RUN: %t/model --steps 10 --seed 3 > %t/out
// RUN: %python %S/../het-compile/Inputs/compare_traces.py %t/ref %t/out --steps 10 --tolerance 1e-6 | FileCheck %s --check-prefix=MATCH
// MATCH: 10 steps match
func.func @model(%x: tensor<8x4xf32>, %labels: tensor<8xi64>, %w: tensor<3x4xf32> {het.param},
                 %b: tensor<3xf32> {het.param}) -> tensor<f32> {
  %y = het.linear %x, %w, %b : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  %loss = het.cross_entropy %y, %labels : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
