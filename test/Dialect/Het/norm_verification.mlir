// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @bn_rank(%x: tensor<16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+2 {{batch norm input must be [N, C, ...] with rank >= 2, got [16]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm %x, %g, %b : tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_scale(%x: tensor<8x16x4x4xf32>, %g: tensor<8xf32>, %b: tensor<16xf32>) {
  // expected-error @+2 {{scale must have shape [C = 16], got [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm %x, %g, %b : tensor<8x16x4x4xf32>, tensor<8xf32>, tensor<16xf32> -> tensor<8x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_eps(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // expected-error @+2 {{'epsilon' must be positive and finite, got 0.000000e+00}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm_relu %x, %g, %b {epsilon = 0.0 : f64} : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_types(%x: tensor<8x16xf32>, %g: tensor<16xf16>, %b: tensor<16xf32>) {
  // expected-error @+2 {{batch norm operands must all have element type 'f32', got 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm %x, %g, %b : tensor<8x16xf32>, tensor<16xf16>, tensor<16xf32> -> tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_inference_variance(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %v: tensor<15xf32>) {
  // expected-error @+2 {{variance must have shape [C = 16], got [15]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.batch_norm_inference %x, %g, %g, %g, %v : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<15xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @bn_grad_type(%dy: tensor<8x32xf32>, %x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{grad_output type 'tensor<8x32xf32>' must equal the input type 'tensor<8x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm_grad %dy, %x, %g, %g, %g : tensor<8x32xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_relu_grad_output(%dy: tensor<8x16xf32>, %y: tensor<8x16xf64>, %x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{output type 'tensor<8x16xf64>' must equal the input type 'tensor<8x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm_relu_grad %dy, %y, %x, %g, %g, %g : tensor<8x16xf32>, tensor<8x16xf64>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @bn_grad_stats(%dy: tensor<8x16xf32>, %x: tensor<8x16xf32>, %g: tensor<16xf32>, %m: tensor<4xf32>) {
  // expected-error @+2 {{saved_mean must have shape [C = 16], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.batch_norm_grad %dy, %x, %g, %m, %g : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<4xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @ln_rank(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+2 {{layer norm input must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.layer_norm %x, %g, %g : tensor<f32>, tensor<1xf32>, tensor<1xf32> -> tensor<f32>, tensor<f32>, tensor<f32>
  return
}

// -----

func.func @ln_scale(%x: tensor<4x64xf32>, %g: tensor<32xf32>, %b: tensor<64xf32>) {
  // expected-error @+2 {{scale must have shape [D = 64], got [32]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.layer_norm %x, %g, %b : tensor<4x64xf32>, tensor<32xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @ln_bias(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %b: tensor<63xf32>) {
  // expected-error @+2 {{bias must have shape [D = 64], got [63]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.layer_norm %x, %g, %b : tensor<4x64xf32>, tensor<64xf32>, tensor<63xf32> -> tensor<4x64xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @ln_eps(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{'epsilon' must be positive and finite, got -1.000000e+00}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.layer_norm %x, %g, %g {epsilon = -1.0 : f64} : tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @ln_grad_stats(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %m: tensor<64xf32>) {
  // expected-error @+2 {{saved_mean must have the input's shape without its last dimension, [4], got [64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.layer_norm_grad %x, %x, %g, %m, %m : tensor<4x64xf32>, tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @ln_grad_type(%dy: tensor<4x32xf32>, %x: tensor<4x64xf32>, %g: tensor<64xf32>, %m: tensor<4xf32>) {
  // expected-error @+2 {{grad_output type 'tensor<4x32xf32>' must equal the input type 'tensor<4x64xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = het.layer_norm_grad %dy, %x, %g, %m, %m : tensor<4x32xf32>, tensor<4x64xf32>, tensor<64xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rms_rank(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+2 {{rms norm input must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm %x, %g : tensor<f32>, tensor<1xf32> -> tensor<f32>, tensor<f32>
  return
}

// -----

func.func @rms_scale(%x: tensor<4x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+2 {{scale must have shape [D = 64], got [32]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm %x, %g : tensor<4x64xf32>, tensor<32xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @rms_element_type(%x: tensor<4x64xf32>, %g: tensor<64xf64>) {
  // expected-error @+2 {{rms norm operands must all have element type 'f32', got 'f64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm %x, %g : tensor<4x64xf32>, tensor<64xf64> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @rms_eps(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{'epsilon' must be positive and finite, got 0.000000e+00}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm %x, %g {epsilon = 0.0 : f64} : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4xf32>
  return
}

// -----

func.func @rms_result(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{'het.rms_norm' op inferred type(s) 'tensor<4x64xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<4x64xf32>', 'tensor<4x64xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm %x, %g : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<4x64xf32>
  return
}

// -----

func.func @rms_grad_stats(%x: tensor<4x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+2 {{saved_rstd must have the input's shape without its last dimension, [4], got [64]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm_grad %x, %x, %g, %g : tensor<4x64xf32>, tensor<4x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @rms_grad_type(%dy: tensor<4x32xf32>, %x: tensor<4x64xf32>, %g: tensor<64xf32>, %r: tensor<4xf32>) {
  // expected-error @+2 {{grad_output type 'tensor<4x32xf32>' must equal the input type 'tensor<4x64xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.rms_norm_grad %dy, %x, %g, %r : tensor<4x32xf32>, tensor<4x64xf32>, tensor<64xf32>, tensor<4xf32> -> tensor<4x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @running_stats_shape(%x: tensor<8x16xf32>, %r: tensor<8xf32>, %s: tensor<16xf32>) {
  // expected-error @+2 {{running_mean must have shape [C = 16], got [8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.batch_norm_running_stats %r, %s, %s, %s, %x : tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>, tensor<16xf32>
  return
}

// -----

func.func @running_stats_momentum(%x: tensor<8x16xf32>, %s: tensor<16xf32>) {
  // expected-error @+2 {{'momentum' must be in [0, 1], got 1.5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.batch_norm_running_stats %s, %s, %s, %s, %x {momentum = 1.5 : f64} : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>, tensor<16xf32>
  return
}

// -----

// PyTorch refuses a training-mode batch of one value per channel; the
// unbiased variance would divide by zero.
func.func @running_stats_one_value(%x: tensor<1x16xf32>, %s: tensor<16xf32>) {
  // expected-error @+2 {{running statistics need more than one value per channel (PyTorch refuses such a batch in training mode), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = het.batch_norm_running_stats %s, %s, %s, %s, %x : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<1x16xf32> -> tensor<16xf32>, tensor<16xf32>
  return
}
