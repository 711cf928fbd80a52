// RUN: het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=bf16}))' --split-input-file | FileCheck %s
// RUN: het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=fp16}))' --split-input-file | FileCheck %s --check-prefix=HALF

// Products in bf16 (operands cast once, before their first user, in its
// layer), an activation of a bf16 value in bf16, a residual add of bf16 and
// f32 promoted to f32, layer norm and the loss in f32. Parameters stay f32.
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %[[X:.*]]: tensor<8x16xf32>, %[[L:.*]]: tensor<8xi64>, %[[W:.*]]: tensor<16x16xf32> {het.param}, %[[B:.*]]: tensor<16xf32> {het.param}, %[[G:.*]]: tensor<16xf32> {het.param}
// CHECK: %[[X16:.*]] = het.cast %[[X]] {het.layer = 0 : i64} : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK: %[[W16:.*]] = het.cast %[[W]] {het.layer = 0 : i64} : tensor<16x16xf32> -> tensor<16x16xbf16>
// CHECK: %[[B16:.*]] = het.cast %[[B]] {het.layer = 0 : i64} : tensor<16xf32> -> tensor<16xbf16>
// CHECK: %[[Y:.*]] = het.linear %[[X16]], %[[W16]], %[[B16]] {het.layer = 0 : i64} : tensor<8x16xbf16>, tensor<16x16xbf16>, tensor<16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[R:.*]] = het.gelu %[[Y]] {{.*}}: tensor<8x16xbf16>
// CHECK: %[[RUP:.*]] = het.cast %[[R]] {{.*}}: tensor<8x16xbf16> -> tensor<8x16xf32>
// CHECK: %[[S:.*]] = het.add %[[RUP]], %[[X]] {{.*}}: tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK: het.layer_norm %[[S]], %[[G]], %[[B]] {{.*}}: tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>
// The second product reuses the bf16 copy of W.
// CHECK: het.linear %{{.*}}, %[[W16]] {het.layer = 1 : i64} : tensor<8x16xbf16>, tensor<16x16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[LOGITS:.*]] = het.cast %{{.*}} : tensor<8x16xbf16> -> tensor<8x16xf32>
// CHECK: het.cross_entropy %[[LOGITS]], %[[L]] {{.*}}: tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>
// HALF-LABEL: func.func @block(
// HALF: het.linear {{.*}} : tensor<8x16xf16>, tensor<16x16xf16>, tensor<16xf16> -> tensor<8x16xf16>
func.func @block(%x: tensor<8x16xf32>, %labels: tensor<8xi64>, %w: tensor<16x16xf32> {het.param},
                 %b: tensor<16xf32> {het.param}, %g: tensor<16xf32> {het.param}) -> tensor<f32> {
  %y = het.linear %x, %w, %b {het.layer = 0 : i64} : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %r = het.gelu %y {het.layer = 0 : i64} : tensor<8x16xf32>
  %s = het.add %r, %x {het.layer = 0 : i64} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %n, %mean, %rstd = het.layer_norm %s, %g, %b {het.layer = 1 : i64} : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<8x16xf32>, tensor<8xf32>, tensor<8xf32>
  %z = het.linear %n, %w {het.layer = 1 : i64} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %loss = het.cross_entropy %z, %labels {het.layer = 1 : i64} : tensor<8x16xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention and convolutions are products too; a function's results keep
// their declared formats.
// CHECK-LABEL: func.func @attention(
// CHECK: het.attention {{.*}} : tensor<2x4x8xbf16>, tensor<2x4x8xbf16>, tensor<2x4x8xbf16> -> tensor<2x4x8xbf16>
// CHECK: %[[OUT:.*]] = het.cast {{.*}} : tensor<2x4x8xbf16> -> tensor<2x4x8xf32>
// CHECK: return %[[OUT]] : tensor<2x4x8xf32>
func.func @attention(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %o = het.attention %q, %k, %v {causal} : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// A training step is past the point where autocast applies (the error:
// autocast_errors.mlir).
