// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @unscaled_types(%scale: tensor<f32>, %dw: tensor<4x8xf32>) {
  // expected-error @+1 {{'het.unscale_gradients' op failed to verify that all of {gradients, unscaled} have same type}}
  %inf, %g = het.unscale_gradients %scale, %dw : tensor<f32>, tensor<4x8xf32> -> tensor<f32>, tensor<4x8xbf16>
  return
}

// -----

func.func @select_types(%p: tensor<f32>, %a: tensor<4xf32>, %b: tensor<4xbf16>) {
  // expected-error @+1 {{'het.select' op failed to verify that all of {on_true, on_false, result} have same type}}
  %r = "het.select"(%p, %a, %b) : (tensor<f32>, tensor<4xf32>, tensor<4xbf16>) -> tensor<4xf32>
  return
}

// -----

func.func @backoff(%inf: tensor<f32>, %ratio: tensor<f32>, %count: tensor<f32>) {
  // expected-error @+1 {{'backoff_factor' must be between 0 and 1}}
  %r, %c = het.loss_scale_update %inf, %ratio, %count {init_scale = 1024.0 : f64, backoff_factor = 2.0 : f64} : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>
  return
}

// -----

func.func @interval(%inf: tensor<f32>, %ratio: tensor<f32>, %count: tensor<f32>) {
  // expected-error @+1 {{'growth_interval' must be at least 1}}
  %r, %c = het.loss_scale_update %inf, %ratio, %count {init_scale = 1024.0 : f64, growth_interval = 0 : i64} : tensor<f32>, tensor<f32>, tensor<f32> -> tensor<f32>, tensor<f32>
  return
}
