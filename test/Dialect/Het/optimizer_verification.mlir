// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @sgd_lr(%w: tensor<4xf32>) {
  // expected-error @+1 {{'het.sgd' op 'lr' must be in [0, inf), got -1}}
  %0:2 = het.sgd %w, %w, %w {lr = -1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_momentum(%w: tensor<4xf32>) {
  // expected-error @+1 {{'het.sgd' op 'momentum' must be in [0, 1), got 1}}
  %0:2 = het.sgd %w, %w, %w {lr = 0.1 : f64, momentum = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_weight_decay(%w: tensor<4xf32>) {
  // expected-error @+1 {{'het.sgd' op 'weight_decay' must be in [0, inf), got -0.5}}
  %0:2 = het.sgd %w, %w, %w {lr = 0.1 : f64, weight_decay = -0.5 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_nesterov(%w: tensor<4xf32>) {
  // expected-error @+1 {{'het.sgd' op nesterov needs a non-zero momentum}}
  %0:2 = het.sgd %w, %w, %w {lr = 0.1 : f64, nesterov} : tensor<4xf32>
  return
}

// -----

func.func @sgd_types(%w: tensor<4xf32>, %g: tensor<5xf32>) {
  // expected-error @+1 {{'het.sgd' op failed to verify that all of {param, grad, momentum_buffer, new_param, new_momentum_buffer} have same type}}
  %0:2 = "het.sgd"(%w, %g, %w) {lr = 0.1 : f64} : (tensor<4xf32>, tensor<5xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_beta1(%w: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'het.adam' op 'beta1' must be in [0, 1), got 1.5}}
  %0:3 = het.adam %w, %w, %w, %w, %s {lr = 0.001 : f64, beta1 = 1.5 : f64} : tensor<4xf32>, tensor<i64>
  return
}

// -----

func.func @adam_beta2(%w: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'het.adam' op 'beta2' must be in [0, 1), got -0.1}}
  %0:3 = het.adam %w, %w, %w, %w, %s {lr = 0.001 : f64, beta2 = -0.1 : f64} : tensor<4xf32>, tensor<i64>
  return
}

// -----

func.func @adam_eps(%w: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'het.adam' op 'epsilon' must be in (0, inf), got 0}}
  %0:3 = het.adam %w, %w, %w, %w, %s {lr = 0.001 : f64, epsilon = 0.0 : f64} : tensor<4xf32>, tensor<i64>
  return
}

// -----

func.func @adam_lr(%w: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{'het.adam' op 'lr' must be in [0, inf), got -0.001}}
  %0:3 = het.adam %w, %w, %w, %w, %s {lr = -0.001 : f64} : tensor<4xf32>, tensor<i64>
  return
}

// -----

func.func @adam_step(%w: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'het.adam' op operand #4 must be 0D tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0:3 = het.adam %w, %w, %w, %w, %s {lr = 0.001 : f64} : tensor<4xf32>, tensor<2xi64>
  return
}
