// Gradient check of every differentiable het op: the loss weights each
// output element by a random data tensor %r, so every output gradient is
// distinct; het-autodiff's gradient of every parameter element is compared
// with a five-point finite difference in 80-bit precision.
// RUN: het-eval %s --check-gradients --samples 24 --tolerance 1e-6 | FileCheck %s

// CHECK: gradcheck @relu: {{.*}} PASS
func.func @relu(%x: tensor<3x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.relu %x : tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @gelu: {{.*}} PASS
func.func @gelu(%x: tensor<3x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.gelu %x : tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @gelu_tanh: {{.*}} PASS
func.func @gelu_tanh(%x: tensor<3x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.gelu %x {approximate = #het.gelu_approximation<tanh>} : tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @add_broadcast: {{.*}} PASS
func.func @add_broadcast(%a: tensor<3x4xf64> {het.param}, %b: tensor<4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.add %a, %b : tensor<3x4xf64>, tensor<4xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @sub_broadcast: {{.*}} PASS
func.func @sub_broadcast(%a: tensor<3x1xf64> {het.param}, %b: tensor<3x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.sub %a, %b : tensor<3x1xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @mul_broadcast: {{.*}} PASS
func.func @mul_broadcast(%a: tensor<3x4xf64> {het.param}, %b: tensor<f64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.mul %a, %b : tensor<3x4xf64>, tensor<f64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @matmul_00: {{.*}} PASS
func.func @matmul_00(%a: tensor<3x5xf64> {het.param}, %b: tensor<5x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.matmul %a, %b : tensor<3x5xf64>, tensor<5x4xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @matmul_01: {{.*}} PASS
func.func @matmul_01(%a: tensor<3x5xf64> {het.param}, %b: tensor<4x5xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.matmul %a, %b {transpose_rhs} : tensor<3x5xf64>, tensor<4x5xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @matmul_10: {{.*}} PASS
func.func @matmul_10(%a: tensor<5x3xf64> {het.param}, %b: tensor<5x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.matmul %a, %b {transpose_lhs} : tensor<5x3xf64>, tensor<5x4xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @matmul_11: {{.*}} PASS
func.func @matmul_11(%a: tensor<5x3xf64> {het.param}, %b: tensor<4x5xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.matmul %a, %b {transpose_lhs, transpose_rhs} : tensor<5x3xf64>, tensor<4x5xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @matmul_batched_shared_rhs: {{.*}} PASS
func.func @matmul_batched_shared_rhs(%a: tensor<2x3x5xf64> {het.param}, %b: tensor<4x5xf64> {het.param}, %r: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = het.matmul %a, %b {transpose_rhs} : tensor<2x3x5xf64>, tensor<4x5xf64> -> tensor<2x3x4xf64>
  %weighted = het.mul %y, %r : tensor<2x3x4xf64>, tensor<2x3x4xf64> -> tensor<2x3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @matmul_attention: {{.*}} PASS
func.func @matmul_attention(%q: tensor<2x3x5xf64> {het.param}, %k: tensor<2x4x5xf64> {het.param}, %r: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = het.matmul %q, %k {transpose_rhs} : tensor<2x3x5xf64>, tensor<2x4x5xf64> -> tensor<2x3x4xf64>
  %weighted = het.mul %y, %r : tensor<2x3x4xf64>, tensor<2x3x4xf64> -> tensor<2x3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @linear_none: {{.*}} PASS
func.func @linear_none(%x: tensor<2x3x5xf64> {het.param}, %w: tensor<4x5xf64> {het.param}, %b: tensor<4xf64> {het.param}, %r: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = het.linear %x, %w, %b : tensor<2x3x5xf64>, tensor<4x5xf64>, tensor<4xf64> -> tensor<2x3x4xf64>
  %weighted = het.mul %y, %r : tensor<2x3x4xf64>, tensor<2x3x4xf64> -> tensor<2x3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @linear_relu: {{.*}} PASS
func.func @linear_relu(%x: tensor<2x3x5xf64> {het.param}, %w: tensor<4x5xf64> {het.param}, %b: tensor<4xf64> {het.param}, %r: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = het.linear %x, %w, %b {activation = #het.activation<relu>} : tensor<2x3x5xf64>, tensor<4x5xf64>, tensor<4xf64> -> tensor<2x3x4xf64>
  %weighted = het.mul %y, %r : tensor<2x3x4xf64>, tensor<2x3x4xf64> -> tensor<2x3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @linear_gelu: {{.*}} PASS
func.func @linear_gelu(%x: tensor<2x3x5xf64> {het.param}, %w: tensor<4x5xf64> {het.param}, %b: tensor<4xf64> {het.param}, %r: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = het.linear %x, %w, %b {activation = #het.activation<gelu>} : tensor<2x3x5xf64>, tensor<4x5xf64>, tensor<4xf64> -> tensor<2x3x4xf64>
  %weighted = het.mul %y, %r : tensor<2x3x4xf64>, tensor<2x3x4xf64> -> tensor<2x3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @linear_no_bias: {{.*}} PASS
func.func @linear_no_bias(%x: tensor<3x5xf64> {het.param}, %w: tensor<4x5xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.linear %x, %w : tensor<3x5xf64>, tensor<4x5xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @conv2d: {{.*}} PASS
func.func @conv2d(%x: tensor<2x4x7x6xf64> {het.param}, %k: tensor<6x2x3x2xf64> {het.param}, %b: tensor<6xf64> {het.param}, %r: tensor<2x6x4x6xf64>) -> tensor<f64> {
  %y = het.conv2d %x, %k, %b {strides = array<i64: 2, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 2>, groups = 2 : i64} : tensor<2x4x7x6xf64>, tensor<6x2x3x2xf64>, tensor<6xf64> -> tensor<2x6x4x6xf64>
  %weighted = het.mul %y, %r : tensor<2x6x4x6xf64>, tensor<2x6x4x6xf64> -> tensor<2x6x4x6xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2, 3>} : tensor<2x6x4x6xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @max_pool2d: {{.*}} PASS
func.func @max_pool2d(%x: tensor<2x3x5x5xf64> {het.param}, %r: tensor<2x3x3x3xf64>) -> tensor<f64> {
  %y = het.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x5x5xf64> -> tensor<2x3x3x3xf64>
  %weighted = het.mul %y, %r : tensor<2x3x3x3xf64>, tensor<2x3x3x3xf64> -> tensor<2x3x3x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2, 3>} : tensor<2x3x3x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @avg_pool2d: {{.*}} PASS
func.func @avg_pool2d(%x: tensor<2x3x5x5xf64> {het.param}, %r: tensor<2x3x3x3xf64>) -> tensor<f64> {
  %y = het.avg_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x3x5x5xf64> -> tensor<2x3x3x3xf64>
  %weighted = het.mul %y, %r : tensor<2x3x3x3xf64>, tensor<2x3x3x3xf64> -> tensor<2x3x3x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2, 3>} : tensor<2x3x3x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @batch_norm: {{.*}} PASS
func.func @batch_norm(%x: tensor<4x3x2x2xf64> {het.param}, %g: tensor<3xf64> {het.param}, %b: tensor<3xf64> {het.param}, %r: tensor<4x3x2x2xf64>) -> tensor<f64> {
  %y, %m, %s = het.batch_norm %x, %g, %b : tensor<4x3x2x2xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<4x3x2x2xf64>, tensor<3xf64>, tensor<3xf64>
  %weighted = het.mul %y, %r : tensor<4x3x2x2xf64>, tensor<4x3x2x2xf64> -> tensor<4x3x2x2xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2, 3>} : tensor<4x3x2x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// Eval mode (frozen statistics): every operand, the statistics included,
// is differentiable; the variance is kept positive as v^2 + 0.5.
// CHECK: gradcheck @batch_norm_inference: {{.*}} PASS
func.func @batch_norm_inference(%x: tensor<4x3x2x2xf64> {het.param}, %g: tensor<3xf64> {het.param}, %b: tensor<3xf64> {het.param}, %m: tensor<3xf64> {het.param}, %v: tensor<3xf64> {het.param}, %r: tensor<4x3x2x2xf64>) -> tensor<f64> {
  %vs = het.mul %v, %v : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  %half = arith.constant dense<0.5> : tensor<3xf64>
  %vp = het.add %vs, %half : tensor<3xf64>, tensor<3xf64> -> tensor<3xf64>
  %y = het.batch_norm_inference %x, %g, %b, %m, %vp : tensor<4x3x2x2xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<4x3x2x2xf64>
  %weighted = het.mul %y, %r : tensor<4x3x2x2xf64>, tensor<4x3x2x2xf64> -> tensor<4x3x2x2xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2, 3>} : tensor<4x3x2x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @batch_norm_relu: {{.*}} PASS
func.func @batch_norm_relu(%x: tensor<4x3x2x2xf64> {het.param}, %g: tensor<3xf64> {het.param}, %b: tensor<3xf64> {het.param}, %r: tensor<4x3x2x2xf64>) -> tensor<f64> {
  %y, %m, %s = het.batch_norm_relu %x, %g, %b : tensor<4x3x2x2xf64>, tensor<3xf64>, tensor<3xf64> -> tensor<4x3x2x2xf64>, tensor<3xf64>, tensor<3xf64>
  %weighted = het.mul %y, %r : tensor<4x3x2x2xf64>, tensor<4x3x2x2xf64> -> tensor<4x3x2x2xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2, 3>} : tensor<4x3x2x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @layer_norm: {{.*}} PASS
func.func @layer_norm(%x: tensor<2x3x6xf64> {het.param}, %g: tensor<6xf64> {het.param}, %b: tensor<6xf64> {het.param}, %r: tensor<2x3x6xf64>) -> tensor<f64> {
  %y, %m, %s = het.layer_norm %x, %g, %b : tensor<2x3x6xf64>, tensor<6xf64>, tensor<6xf64> -> tensor<2x3x6xf64>, tensor<2x3xf64>, tensor<2x3xf64>
  %weighted = het.mul %y, %r : tensor<2x3x6xf64>, tensor<2x3x6xf64> -> tensor<2x3x6xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x6xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @rms_norm: {{.*}} PASS
func.func @rms_norm(%x: tensor<2x3x6xf64> {het.param}, %g: tensor<6xf64> {het.param}, %r: tensor<2x3x6xf64>) -> tensor<f64> {
  %y, %s = het.rms_norm %x, %g : tensor<2x3x6xf64>, tensor<6xf64> -> tensor<2x3x6xf64>, tensor<2x3xf64>
  %weighted = het.mul %y, %r : tensor<2x3x6xf64>, tensor<2x3x6xf64> -> tensor<2x3x6xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x6xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// An epsilon comparable to the mean square, so that its part is checked.
// CHECK: gradcheck @rms_norm_epsilon: {{.*}} PASS
func.func @rms_norm_epsilon(%x: tensor<4x5xf64> {het.param}, %g: tensor<5xf64> {het.param}, %r: tensor<4x5xf64>) -> tensor<f64> {
  %y, %s = het.rms_norm %x, %g {epsilon = 0.05 : f64} : tensor<4x5xf64>, tensor<5xf64> -> tensor<4x5xf64>, tensor<4xf64>
  %weighted = het.mul %y, %r : tensor<4x5xf64>, tensor<4x5xf64> -> tensor<4x5xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<4x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @softmax_axis: {{.*}} PASS
func.func @softmax_axis(%x: tensor<3x4x2xf64> {het.param}, %r: tensor<3x4x2xf64>) -> tensor<f64> {
  %y = het.softmax %x {axis = 1 : i64, scale = 0.5 : f64} : tensor<3x4x2xf64>
  %weighted = het.mul %y, %r : tensor<3x4x2xf64>, tensor<3x4x2xf64> -> tensor<3x4x2xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<3x4x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @softmax_causal: {{.*}} PASS
func.func @softmax_causal(%x: tensor<2x4x4xf64> {het.param}, %r: tensor<2x4x4xf64>) -> tensor<f64> {
  %y = het.softmax %x {causal, scale = 0.7 : f64} : tensor<2x4x4xf64>
  %weighted = het.mul %y, %r : tensor<2x4x4xf64>, tensor<2x4x4xf64> -> tensor<2x4x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x4x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @attention_causal: {{.*}} PASS
func.func @attention_causal(%q: tensor<2x5x3xf64> {het.param}, %k: tensor<2x7x3xf64> {het.param},
                            %v: tensor<2x7x2xf64> {het.param}, %r: tensor<2x5x2xf64>) -> tensor<f64> {
  %o = het.attention %q, %k, %v {causal, scale = 0.6 : f64}
      : tensor<2x5x3xf64>, tensor<2x7x3xf64>, tensor<2x7x2xf64> -> tensor<2x5x2xf64>
  %weighted = het.mul %o, %r : tensor<2x5x2xf64>, tensor<2x5x2xf64> -> tensor<2x5x2xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x5x2xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// More queries than keys: the first two queries see no key.
// CHECK: gradcheck @attention_fewer_keys: {{.*}} PASS
func.func @attention_fewer_keys(%q: tensor<6x3xf64> {het.param}, %k: tensor<4x3xf64> {het.param},
                                %v: tensor<4x3xf64> {het.param}, %r: tensor<6x3xf64>) -> tensor<f64> {
  %o = het.attention %q, %k, %v {causal}
      : tensor<6x3xf64>, tensor<4x3xf64>, tensor<4x3xf64> -> tensor<6x3xf64>
  %weighted = het.mul %o, %r : tensor<6x3xf64>, tensor<6x3xf64> -> tensor<6x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @embedding: {{.*}} PASS
func.func @embedding(%t: tensor<6x3xf64> {het.param}, %i: tensor<2x4xi64>, %r: tensor<2x4x3xf64>) -> tensor<f64> {
  %y = het.embedding %t, %i : tensor<6x3xf64>, tensor<2x4xi64> -> tensor<2x4x3xf64>
  %weighted = het.mul %y, %r : tensor<2x4x3xf64>, tensor<2x4x3xf64> -> tensor<2x4x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x4x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @reduce_sum: {{.*}} PASS
func.func @reduce_sum(%x: tensor<2x3x4xf64> {het.param}, %r: tensor<2x4xf64>) -> tensor<f64> {
  %y = het.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3x4xf64> -> tensor<2x4xf64>
  %weighted = het.mul %y, %r : tensor<2x4xf64>, tensor<2x4xf64> -> tensor<2x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<2x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @reduce_mean_keep: {{.*}} PASS
func.func @reduce_mean_keep(%x: tensor<2x3x4xf64> {het.param}, %r: tensor<1x3x1xf64>) -> tensor<f64> {
  %y = het.reduce_mean %x {axes = array<i64: 0, -1>, keep_dims} : tensor<2x3x4xf64> -> tensor<1x3x1xf64>
  %weighted = het.mul %y, %r : tensor<1x3x1xf64>, tensor<1x3x1xf64> -> tensor<1x3x1xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<1x3x1xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @sum_to_shape: {{.*}} PASS
func.func @sum_to_shape(%x: tensor<2x3x4xf64> {het.param}, %r: tensor<3x1xf64>) -> tensor<f64> {
  %y = het.sum_to_shape %x : tensor<2x3x4xf64> -> tensor<3x1xf64>
  %weighted = het.mul %y, %r : tensor<3x1xf64>, tensor<3x1xf64> -> tensor<3x1xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x1xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @broadcast_to: {{.*}} PASS
func.func @broadcast_to(%x: tensor<3x1xf64> {het.param}, %r: tensor<2x3x4xf64>) -> tensor<f64> {
  %y = het.broadcast_to %x : tensor<3x1xf64> -> tensor<2x3x4xf64>
  %weighted = het.mul %y, %r : tensor<2x3x4xf64>, tensor<2x3x4xf64> -> tensor<2x3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<2x3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @reshape: {{.*}} PASS
func.func @reshape(%x: tensor<2x3x4xf64> {het.param}, %r: tensor<6x4xf64>) -> tensor<f64> {
  %y = het.reshape %x : tensor<2x3x4xf64> -> tensor<6x4xf64>
  %weighted = het.mul %y, %r : tensor<6x4xf64>, tensor<6x4xf64> -> tensor<6x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<6x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @transpose: {{.*}} PASS
func.func @transpose(%x: tensor<2x3x4xf64> {het.param}, %r: tensor<4x2x3xf64>) -> tensor<f64> {
  %y = het.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf64> -> tensor<4x2x3xf64>
  %weighted = het.mul %y, %r : tensor<4x2x3xf64>, tensor<4x2x3xf64> -> tensor<4x2x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<4x2x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @multi_use_accumulates: {{.*}} PASS
func.func @multi_use_accumulates(%x: tensor<3x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %a = het.relu %x : tensor<3x4xf64>
  %y = het.mul %a, %x : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @cross_entropy: {{.*}} PASS
func.func @cross_entropy(%x: tensor<2x3x5xf64> {het.param}, %l: tensor<2x3xi64>) -> tensor<f64> {
  %loss = het.cross_entropy %x, %l : tensor<2x3x5xf64>, tensor<2x3xi64> -> tensor<f64>
  return %loss : tensor<f64>
}

// het.elementwise differentiates its scalar body (HetElementwiseGradient.cpp):
// every derivative rule, with a broadcast operand and a computed exponent.
// CHECK: gradcheck @elementwise_unary: {{.*}} PASS
func.func @elementwise_unary(%x: tensor<3x4xf64> {het.param}, %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.elementwise %x : (tensor<3x4xf64>) -> tensor<3x4xf64> {
  ^bb0(%a: f64):
    %one = arith.constant 1.0 : f64
    %e = math.exp %a : f64
    %pos = arith.addf %e, %one : f64
    %l = math.log %pos : f64
    %t = math.tanh %a : f64
    %er = math.erf %a : f64
    %sq = math.sqrt %pos : f64
    %rs = math.rsqrt %pos : f64
    %ab = math.absf %a : f64
    %ng = arith.negf %ab : f64
    %s1 = arith.addf %l, %t : f64
    %s2 = arith.addf %s1, %er : f64
    %s3 = arith.mulf %s2, %sq : f64
    %s4 = arith.addf %s3, %rs : f64
    %s5 = arith.addf %s4, %ng : f64
    het.yield %s5 : f64
  }
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @elementwise_binary: {{.*}} PASS
func.func @elementwise_binary(%x: tensor<3x4xf64> {het.param}, %w: tensor<4xf64> {het.param},
                              %r: tensor<3x4xf64>) -> tensor<f64> {
  %y = het.elementwise %x, %w : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64> {
  ^bb0(%a: f64, %b: f64):
    %two = arith.constant 2.0 : f64
    %lo = arith.constant -0.5 : f64
    %d = arith.subf %a, %b : f64
    %ex = math.exp %b : f64
    %q = arith.divf %a, %ex : f64
    %base = math.exp %d : f64
    %p = math.powf %base, %b : f64
    %sq = math.powf %a, %two : f64
    %mx = arith.maximumf %a, %lo : f64
    %mn = arith.minimumf %b, %two : f64
    %gt = arith.cmpf ogt, %a, %b : f64
    %sel = arith.select %gt, %mx, %mn : f64
    %m = arith.mulf %q, %p : f64
    %s1 = arith.addf %m, %sq : f64
    %s2 = arith.addf %s1, %sel : f64
    het.yield %s2 : f64
  }
  %weighted = het.mul %y, %r : tensor<3x4xf64>, tensor<3x4xf64> -> tensor<3x4xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x4xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @concat_slice: {{.*}} PASS
func.func @concat_slice(%x: tensor<3x4xf64> {het.param}, %y: tensor<3x2xf64> {het.param},
                        %r: tensor<3x3xf64>) -> tensor<f64> {
  %c = het.concat %x, %y {axis = 1 : i64} : (tensor<3x4xf64>, tensor<3x2xf64>) -> tensor<3x6xf64>
  %s = het.slice %c {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: 6>,
                     steps = array<i64: 2>} : tensor<3x6xf64> -> tensor<3x3xf64>
  %sq = het.mul %s, %s : tensor<3x3xf64>, tensor<3x3xf64> -> tensor<3x3xf64>
  %weighted = het.mul %sq, %r : tensor<3x3xf64>, tensor<3x3xf64> -> tensor<3x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<3x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @slice_grad: {{.*}} PASS
func.func @slice_grad(%x: tensor<2x3xf64> {het.param}, %r: tensor<5x3xf64>) -> tensor<f64> {
  %g = het.slice_grad %x {axes = array<i64: 0>, starts = array<i64: 1>, steps = array<i64: 3>,
                          sizes = array<i64: 5>} : tensor<2x3xf64> -> tensor<5x3xf64>
  %weighted = het.mul %g, %r : tensor<5x3xf64>, tensor<5x3xf64> -> tensor<5x3xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1>} : tensor<5x3xf64> -> tensor<f64>
  return %loss : tensor<f64>
}

// CHECK: gradcheck @reduce_max: {{.*}} PASS
func.func @reduce_max(%x: tensor<3x4x5xf64> {het.param}, %r: tensor<3x1x5xf64>) -> tensor<f64> {
  %m = het.reduce_max %x {axes = array<i64: 1>, keep_dims} : tensor<3x4x5xf64> -> tensor<3x1x5xf64>
  %weighted = het.mul %m, %r : tensor<3x1x5xf64>, tensor<3x1x5xf64> -> tensor<3x1x5xf64>
  %loss = het.reduce_sum %weighted {axes = array<i64: 0, 1, 2>} : tensor<3x1x5xf64> -> tensor<f64>
  return %loss : tensor<f64>
}
