// RUN: het-opt %s --het-autodiff="optimizer=none" | FileCheck %s

// het.elementwise's gradient is a het.elementwise over the forward inputs
// and the result gradient whose body recomputes what it needs and applies
// the chain rule; a broadcast operand's gradient is summed back.
// sigmoid(a) * b:
//   da = g * b * d(1/(1+exp(-a)))/da,  db = g * sigmoid(a), summed to [4].
// CHECK-LABEL: func.func @gate_train_step(
// CHECK: %[[DX:.*]] = het.elementwise %arg0, %arg1, %{{.*}} : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32> {
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: het.yield
// CHECK: %[[DWFULL:.*]] = het.elementwise %arg0, %arg1, %{{.*}} : (tensor<3x4xf32>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32> {
// CHECK: het.yield
// CHECK: %[[DW:.*]] = het.sum_to_shape %[[DWFULL]] : tensor<3x4xf32> -> tensor<4xf32>
func.func @gate(%x: tensor<3x4xf32> {het.param}, %w: tensor<4xf32> {het.param}) -> tensor<f32> {
  %y = het.elementwise %x, %w : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32> {
  ^bb0(%a: f32, %b: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %one, %d : f32
    %r = arith.mulf %s, %b : f32
    het.yield %r : f32
  }
  %loss = het.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<3x4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

