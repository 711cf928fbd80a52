// RUN: het-opt %s --het-autodiff="optimizer=sgd learning-rate=0.1" | FileCheck %s --check-prefix=SGD
// RUN: het-opt %s --het-autodiff="optimizer=sgd learning-rate=0.1 momentum=0.9 nesterov=true" | FileCheck %s --check-prefix=MOMENTUM
// RUN: het-opt %s --het-autodiff="optimizer=adam learning-rate=0.001 decoupled=true weight-decay=0.01" | FileCheck %s --check-prefix=ADAM
// RUN: het-opt %s --het-autodiff="optimizer=none" | FileCheck %s --check-prefix=GRAD
// RUN: het-opt %s --het-autodiff="function=two_layer optimizer=none" | FileCheck %s --check-prefix=SINGLE

// The forward function stays as it was, for inference.
// SGD-LABEL: func.func @two_layer(
// SGD-NOT: het.sgd
// SGD: return

// The step keeps the arguments and returns the loss and each updated
// parameter under the argument's name; backward ops carry the forward op's
// layer and updates the layer of the parameter's first use.
// SGD-LABEL: func.func @two_layer_train_step(
// SGD-SAME: %[[X:.*]]: tensor<4x8xf32> {het.name = "x"}, %[[L:.*]]: tensor<4xi64>,
// SGD-SAME: %[[W1:.*]]: tensor<16x8xf32> {het.name = "fc1.weight", het.param},
// SGD-SAME: %[[W2:.*]]: tensor<3x16xf32> {het.name = "fc2.weight", het.param})
// SGD-SAME: -> (tensor<f32> {het.name = "loss"}, tensor<16x8xf32> {het.name = "fc1.weight"}, tensor<3x16xf32> {het.name = "fc2.weight"})
// SGD: %[[H:.*]] = het.linear %[[X]], %[[W1]] {het.layer = 0 : i64}
// SGD: %[[A:.*]] = het.relu %[[H]]
// SGD: %[[Y:.*]] = het.linear %[[A]], %[[W2]] {het.layer = 1 : i64}
// SGD: %[[LOSS:.*]] = het.cross_entropy %[[Y]], %[[L]]
// SGD: %[[SEED:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// SGD: %[[DY:.*]] = het.cross_entropy_grad %[[SEED]], %[[Y]], %[[L]] {het.layer = 1 : i64}
// SGD: %[[DA:.*]], %[[DW2:.*]], %{{.*}} = het.linear_grad %[[DY]], %[[A]], %[[W2]] {het.layer = 1 : i64}
// SGD: %[[DH:.*]] = het.relu_grad %[[DA]], %[[H]] {het.layer = 0 : i64}
// SGD: %{{.*}}, %[[DW1:.*]], %{{.*}} = het.linear_grad %[[DH]], %[[X]], %[[W1]] {het.layer = 0 : i64}
// SGD: %[[NW1:.*]], %{{.*}} = het.sgd %[[W1]], %[[DW1]], %{{.*}} {het.layer = 0 : i64, lr = 1.000000e-01 : f64}
// SGD: %[[NW2:.*]], %{{.*}} = het.sgd %[[W2]], %[[DW2]], %{{.*}} {het.layer = 1 : i64, lr = 1.000000e-01 : f64}
// SGD: return %[[LOSS]], %[[NW1]], %[[NW2]]

// Momentum adds one buffer per parameter as optimizer state.
// MOMENTUM-LABEL: func.func @two_layer_train_step(
// MOMENTUM-SAME: tensor<16x8xf32> {het.name = "fc1.weight.momentum_buffer", het.state}
// MOMENTUM-SAME: tensor<3x16xf32> {het.name = "fc2.weight.momentum_buffer", het.state}
// MOMENTUM-SAME: {het.name = "fc1.weight.momentum_buffer"}, tensor<3x16xf32> {het.name = "fc2.weight.momentum_buffer"})
// MOMENTUM: het.sgd {{.*}}momentum = 9.000000e-01 : f64, nesterov

// Adam: two moments per parameter and one shared 1-based step counter.
// ADAM-LABEL: func.func @two_layer_train_step(
// ADAM-SAME: %[[STEP:[^:]*]]: tensor<i64> {het.name = "adam.step", het.state}
// ADAM-SAME: {het.name = "fc1.weight.exp_avg", het.state}
// ADAM-SAME: {het.name = "fc1.weight.exp_avg_sq", het.state}
// ADAM: %[[NEXT:.*]] = arith.addi %[[STEP]], %{{.*}} : tensor<i64>
// ADAM: het.adam {{.*}}, %[[NEXT]] {decoupled, {{.*}}weight_decay = 1.000000e-02 : f64}
// ADAM: return {{.*}}, %[[NEXT]] :

// Gradients only.
// GRAD-LABEL: func.func @two_layer_train_step(
// GRAD-SAME: -> (tensor<f32> {het.name = "loss"}, tensor<16x8xf32> {het.name = "fc1.weight.grad"}, tensor<3x16xf32> {het.name = "fc2.weight.grad"})
// GRAD-NOT: het.sgd
// GRAD-LABEL: func.func @unnamed_train_step(
// GRAD-SAME: {het.name = "arg1.grad"}
func.func @two_layer(%x: tensor<4x8xf32> {het.name = "x"}, %labels: tensor<4xi64>,
                     %w1: tensor<16x8xf32> {het.param, het.name = "fc1.weight"},
                     %w2: tensor<3x16xf32> {het.param, het.name = "fc2.weight"}) -> tensor<f32> {
  %h = het.linear %x, %w1 {het.layer = 0 : i64} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %a = het.relu %h {het.layer = 0 : i64} : tensor<4x16xf32>
  %y = het.linear %a, %w2 {het.layer = 1 : i64} : tensor<4x16xf32>, tensor<3x16xf32> -> tensor<4x3xf32>
  %loss = het.cross_entropy %y, %labels {het.layer = 1 : i64} : tensor<4x3xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// Unnamed arguments are keyed arg<i>; a parameter the loss does not depend
// on gets a zero gradient.
// GRAD: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// GRAD: return %{{.*}}, %{{.*}}, %[[ZERO]]
// SINGLE: func.func @two_layer_train_step(
// SINGLE-NOT: @unnamed_train_step
func.func @unnamed(%x: tensor<3xf32>, %w: tensor<3xf32> {het.param}, %unused: tensor<3xf32> {het.param}) -> tensor<f32> {
  %p = het.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %loss = het.reduce_sum %p {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// Functions without parameters are left alone.
// SGD-NOT: @no_params_train_step
func.func @no_params(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}

// A named loss result is fine: the step sets its own result names.
// SGD-LABEL: func.func @named_loss_train_step(
// SGD-SAME: -> (tensor<f32> {het.name = "loss"}, tensor<3xf32> {het.name = "arg0"})
func.func @named_loss(%w: tensor<3xf32> {het.param}) -> (tensor<f32> {het.name = "loss"}) {
  %loss = het.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// State the forward model updates (BatchNorm's running statistics) is
// returned last, under its argument's name, after the optimizer state; it
// gets no gradient and no update of its own.
// SGD-LABEL: func.func @running_stats_train_step(
// SGD-SAME: %[[RM:[^:]*]]: tensor<3xf32> {het.name = "bn.running_mean", het.state}
// SGD-SAME: %[[RV:[^:]*]]: tensor<3xf32> {het.name = "bn.running_var", het.state}
// SGD-SAME: -> (tensor<f32> {het.name = "loss"}, tensor<3xf32> {het.name = "g"}, tensor<3xf32> {het.name = "bn.running_mean"}, tensor<3xf32> {het.name = "bn.running_var"})
// SGD: %[[Y:.*]], %[[M:.*]], %[[S:.*]] = het.batch_norm
// SGD: %[[NM:.*]], %[[NV:.*]] = het.batch_norm_running_stats %[[RM]], %[[RV]], %[[M]], %[[S]]
// SGD-NOT: het.sgd %[[RM]]
// SGD: return %{{.*}}, %{{.*}}, %[[NM]], %[[NV]] :
// ADAM-LABEL: func.func @running_stats_train_step(
// ADAM-SAME: {het.name = "adam.step"}, tensor<3xf32> {het.name = "bn.running_mean"}, tensor<3xf32> {het.name = "bn.running_var"})
func.func @running_stats(%x: tensor<4x3xf32>, %g: tensor<3xf32> {het.param, het.name = "g"},
                         %rm: tensor<3xf32> {het.state, het.name = "bn.running_mean"},
                         %rv: tensor<3xf32> {het.state, het.name = "bn.running_var"})
    -> (tensor<f32>, tensor<3xf32> {het.name = "bn.running_mean"},
        tensor<3xf32> {het.name = "bn.running_var"}) {
  %b = arith.constant dense<0.0> : tensor<3xf32>
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %nm, %nv = het.batch_norm_running_stats %rm, %rv, %m, %s, %x : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32> -> tensor<3xf32>, tensor<3xf32>
  %sq = het.mul %y, %y : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %loss = het.reduce_sum %sq {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
  return %loss, %nm, %nv : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
