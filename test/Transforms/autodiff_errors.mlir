// RUN: het-opt %s --het-autodiff --split-input-file --verify-diagnostics

// A result after the loss must be the next value of a het.state argument.
// expected-error @+1 {{het-autodiff: @two_results result 1 ('result1') is neither the loss nor named like a het.state argument}}
func.func @two_results(%w: tensor<3xf32> {het.param}) -> (tensor<f32>, tensor<3xf32>) {
  %l = het.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{het-autodiff: @state_type result 1 ('bn.running_mean') has another type than the het.state argument of that name}}
func.func @state_type(%w: tensor<3xf32> {het.param},
                      %s: tensor<4xf32> {het.state, het.name = "bn.running_mean"})
    -> (tensor<f32>, tensor<3xf32> {het.name = "bn.running_mean"}) {
  %l = het.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{het-autodiff: @vector_loss must return a 0-d float loss first, returns 'tensor<3xf32>'}}
func.func @vector_loss(%w: tensor<3xf32> {het.param}) -> tensor<3xf32> {
  %y = het.relu %w : tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// An op on the path from a parameter to the loss without a gradient rule
// (running statistics are state, never differentiated).
func.func @no_rule(%x: tensor<2x3x4x4xf32>, %m: tensor<3xf32> {het.param}, %v: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'het.batch_norm_running_stats' op has no gradient rule, but lies on the path from a parameter to the loss of @no_rule}}
  %nm, %nv = het.batch_norm_running_stats %m, %v, %v, %v, %x : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32> -> tensor<3xf32>, tensor<3xf32>
  %loss = het.reduce_sum %nm {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Saved statistics are for the backward op, not for the loss.
func.func @statistics_in_loss(%x: tensor<4x3xf32> {het.param}, %g: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'het.batch_norm' op result #1 (saved statistics) is used on the path to the loss; only the normalized output is differentiable}}
  %y, %mean, %inv = het.batch_norm %x, %g, %b : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>
  %loss = het.reduce_sum %mean {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

func.func @exists(%w: tensor<3xf32> {het.param}) -> tensor<f32> {
  %loss = het.reduce_sum %w {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
// expected-error @-4 {{het-autodiff: @exists_train_step already exists; rename it or pass function=<name>}}
func.func private @exists_train_step()
