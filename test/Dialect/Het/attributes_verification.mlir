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

// -----

// het.gemm_engines: a bit per matrix product of a dense layer (1 forward, 2
// backward), on het.linear and het.linear_grad only.
func.func @gemm_engines(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %dy: tensor<8x3xf32>) {
  %y = het.linear %x, %w {het.gemm_engines = 1 : i64} : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  %dx, %dw, %db = het.linear_grad %dy, %x, %w {het.gemm_engines = 3 : i64}
      : tensor<8x3xf32>, tensor<8x4xf32>, tensor<3x4xf32>
     -> tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>
  return
}

// -----

func.func @gemm_engines_too_many_bits(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'het.gemm_engines' must be a 64-bit integer with a bit for each of the op's 1 matrix products, got 2 : i64}}
  %y = het.linear %x, %w {het.gemm_engines = 2 : i64} : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

func.func @gemm_engines_not_a_dense_layer(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'het.gemm_engines' belongs on het.linear and het.linear_grad}}
  %y = het.relu %x {het.gemm_engines = 1 : i64} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @gemm_engines_fused_activation(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'het.gemm_engines' puts the forward product on OpenBLAS, which cannot apply the layer's fused activation}}
  %y = het.linear %x, %w {activation = #het.activation<relu>, het.gemm_engines = 1 : i64} : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

func.func @f32_boundary_not_a_cast(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'het.f32_boundary' is a unit attribute of het.cast, got unit on het.relu}}
  %y = het.relu %x {het.f32_boundary} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

func.func @built_format_not_a_stage(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'het.built_format' is a string on het.stage, got "bf16"}}
  %y = het.relu %x {het.built_format = "bf16"} : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
