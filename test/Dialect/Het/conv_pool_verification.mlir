// RUN: het-opt %s -split-input-file -verify-diagnostics

func.func @conv_input_rank(%x: tensor<3x32x32xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{input must be 4-D [N, C, H, W], got rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w : tensor<3x32x32xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x30x30xf32>
  return
}

// -----

func.func @conv_filter_rank(%x: tensor<1x3x32x32xf32>, %w: tensor<8x3x3xf32>) {
  // expected-error @+2 {{filter must be 4-D [O, C/groups, KH, KW], got rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w : tensor<1x3x32x32xf32>, tensor<8x3x3xf32> -> tensor<1x8x30x30xf32>
  return
}

// -----

func.func @conv_strides(%x: tensor<1x3x32x32xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{'strides' must have 2 entries (height, width), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w {strides = array<i64: 2>} : tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x15x15xf32>
  return
}

// -----

func.func @conv_padding(%x: tensor<1x3x32x32xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{'padding' entries must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w {padding = array<i64: -1, 0>} : tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x28x30xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<1x3x32x32xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{'groups' must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w {groups = 0 : i64} : tensor<1x3x32x32xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x30x30xf32>
  return
}

// -----

func.func @conv_input_groups(%x: tensor<1x3x32x32xf32>, %w: tensor<8x1x3x3xf32>) {
  // expected-error @+2 {{input channels (3) must divide by groups (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w {groups = 2 : i64} : tensor<1x3x32x32xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x30x30xf32>
  return
}

// -----

func.func @conv_output_groups(%x: tensor<1x4x32x32xf32>, %w: tensor<7x2x3x3xf32>) {
  // expected-error @+2 {{output channels (7) must divide by groups (2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w {groups = 2 : i64} : tensor<1x4x32x32xf32>, tensor<7x2x3x3xf32> -> tensor<1x7x30x30xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x4x32x32xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{filter has 3 input channels per group, but the input has 4 channels in 1 group(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w : tensor<1x4x32x32xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x30x30xf32>
  return
}

// -----

func.func @conv_kernel_too_big(%x: tensor<1x3x2x2xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+2 {{the kernel [3, 3] does not fit the padded input [2, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.conv2d %x, %w : tensor<1x3x2x2xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x1x1xf32>
  return
}

// -----

func.func @conv_grad_input(%dy: tensor<1x8x30x30xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{'het.conv2d_grad_input' op grad_output [1, 8, 30, 30] is not the forward output [1, 8, 32, 32] of an input [1, 3, 32, 32]}}
  %0 = het.conv2d_grad_input %dy, %w {padding = array<i64: 1, 1>} : tensor<1x8x30x30xf32>, tensor<8x3x3x3xf32> -> tensor<1x3x32x32xf32>
  return
}

// -----

func.func @conv_grad_filter(%dy: tensor<1x8x30x30xf32>, %x: tensor<1x3x32x32xf32>) {
  // expected-error @+1 {{'het.conv2d_grad_filter' op grad_output [1, 8, 30, 30] is not the forward output [1, 8, 28, 28] of a filter [8, 3, 5, 5]}}
  %0 = het.conv2d_grad_filter %dy, %x : tensor<1x8x30x30xf32>, tensor<1x3x32x32xf32> -> tensor<8x3x5x5xf32>
  return
}

// -----

func.func @conv_grad_types(%dy: tensor<1x8x30x30xf32>, %x: tensor<1x3x32x32xf64>) {
  // expected-error @+1 {{conv2d_grad_filter operands and result must all have element type 'f32', got 'f64'}}
  %0 = het.conv2d_grad_filter %dy, %x : tensor<1x8x30x30xf32>, tensor<1x3x32x32xf64> -> tensor<8x3x3x3xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<8x32x32xf32>) {
  // expected-error @+2 {{input must be 4-D [N, C, H, W], got rank 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x32x32xf32> -> tensor<8x16x16xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x8x32x32xf32>) {
  // expected-error @+2 {{'kernel' entries must be >= 1, got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.avg_pool2d %x {kernel = array<i64: 0, 2>, strides = array<i64: 2, 2>} : tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @pool_padding(%x: tensor<1x8x32x32xf32>) {
  // expected-error @+2 {{padding 2 is more than half the kernel size 2, so a window could hold only padding}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 2, 0>} : tensor<1x8x32x32xf32> -> tensor<1x8x18x16xf32>
  return
}

// -----

func.func @pool_window(%x: tensor<1x8x2x2xf32>) {
  // expected-error @+2 {{the window [4, 4] does not fit the padded input [2, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.max_pool2d %x {kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>} : tensor<1x8x2x2xf32> -> tensor<1x8x1x1xf32>
  return
}

// -----

func.func @pool_result(%x: tensor<1x8x32x32xf32>) {
  // expected-error @+2 {{'het.max_pool2d' op inferred type(s) 'tensor<1x8x16x16xf32>' are incompatible with return type(s) of operation 'tensor<1x8x32x32xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = het.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x32x32xf32> -> tensor<1x8x32x32xf32>
  return
}

// -----

func.func @max_pool_grad_type(%dy: tensor<1x8x16x16xf32>, %x: tensor<1x8x32x32xf32>) {
  // expected-error @+1 {{'het.max_pool2d_grad' op grad_input type 'tensor<1x8x16x16xf32>' must equal the input type 'tensor<1x8x32x32xf32>'}}
  %0 = het.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x16x16xf32>, tensor<1x8x32x32xf32> -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @pool_grad_shape(%dy: tensor<1x8x8x8xf32>) {
  // expected-error @+1 {{'het.avg_pool2d_grad' op grad_output [1, 8, 8, 8] is not the pooled shape [1, 8, 16, 16] of [1, 8, 32, 32]}}
  %0 = het.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x8x8xf32> -> tensor<1x8x32x32xf32>
  return
}

// -----

func.func @pool_grad_types(%dy: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{'het.avg_pool2d_grad' op grad_output and grad_input must have the same element type}}
  %0 = het.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x8x16x16xf32> -> tensor<1x8x32x32xf64>
  return
}
