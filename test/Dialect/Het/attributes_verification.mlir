// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @layer_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.layer' must be a 64-bit integer layer index, got "one"}}
  %0 = het.relu %x {het.layer = "one"} : tensor<4xf32>
  return
}

// -----

func.func @layer_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.layer' must be non-negative, got -1}}
  %0 = het.relu %x {het.layer = -1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @param_on_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{'het.param' marks function arguments, not operations}}
  %0 = het.relu %x {het.param} : tensor<4xf32>
  return
}

// -----

func.func @unknown(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown het attribute 'het.stage_hint'}}
  %0 = het.relu %x {het.stage_hint = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{unknown het argument attribute 'het.trainable' on argument #0}}
func.func @unknown_arg(%x: tensor<4xf32> {het.trainable}) {
  return
}

// -----

// expected-error @+1 {{'het.param' is a unit attribute (no value), got true on argument #0}}
func.func @param_value(%x: tensor<4xf32> {het.param = true}) {
  return
}

// -----

// expected-error @+1 {{'het.param' argument #1 must be a ranked float tensor, got 'tensor<4xi32>'}}
func.func @param_type(%x: tensor<4xf32>, %i: tensor<4xi32> {het.param}) {
  return
}
