// RUN: het-opt %s --het-outline-layers | FileCheck %s
// RUN: het-opt %s --het-training-pipeline --het-build-entry-points --het-outline-layers | FileCheck %s --check-prefix=STEP
// RUN: het-opt %s --het-outline-layers=min-ops=3 | FileCheck %s --check-prefix=MIN3

// Three identical hidden layers (the weights are arguments) become three
// calls of one function; the head, of another structure, gets its own.
// Each call keeps the layer it computes.
func.func @deep(%x: tensor<8x16xf32>, %labels: tensor<8xi64>,
                %w0: tensor<16x16xf32> {het.param}, %b0: tensor<16xf32> {het.param},
                %w1: tensor<16x16xf32> {het.param}, %b1: tensor<16xf32> {het.param},
                %w2: tensor<16x16xf32> {het.param}, %b2: tensor<16xf32> {het.param},
                %w3: tensor<4x16xf32> {het.param}, %b3: tensor<4xf32> {het.param})
    -> tensor<f32> {
  %h0 = het.linear %x, %w0, %b0 {het.layer = 0 : i64}
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %a0 = het.relu %h0 {het.layer = 0 : i64} : tensor<8x16xf32>
  %h1 = het.linear %a0, %w1, %b1 {het.layer = 1 : i64}
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %a1 = het.relu %h1 {het.layer = 1 : i64} : tensor<8x16xf32>
  %h2 = het.linear %a1, %w2, %b2 {het.layer = 2 : i64}
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %a2 = het.relu %h2 {het.layer = 2 : i64} : tensor<8x16xf32>
  %logits = het.linear %a2, %w3, %b3 {het.layer = 3 : i64}
      : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %loss = het.cross_entropy %logits, %labels {het.layer = 3 : i64}
      : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// CHECK: module attributes {hetrt.outlined_calls = 4 : i64, hetrt.outlined_functions = 2 : i64}
// CHECK: func.func private @[[HIDDEN:het_outlined_[0-9a-f]+]](%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<16xf32>) -> tensor<8x16xf32> attributes {hetrt.outlined}
// CHECK-NEXT: het.linear
// CHECK-NOT: het.layer
// CHECK-SAME: tensor<16x16xf32>
// CHECK-NEXT: het.relu
// CHECK-NOT: het.layer
// CHECK: return
// CHECK: func.func private @[[HEAD:het_outlined_[0-9a-f]+]](
// CHECK: het.cross_entropy
// CHECK: func.func @deep(
// CHECK-NEXT: %[[A0:.*]] = call @[[HIDDEN]](%arg0, %arg2, %arg3) {het.layer = 0 : i64}
// CHECK-NEXT: %[[A1:.*]] = call @[[HIDDEN]](%[[A0]], %arg4, %arg5) {het.layer = 1 : i64}
// CHECK-NEXT: %[[A2:.*]] = call @[[HIDDEN]](%[[A1]], %arg6, %arg7) {het.layer = 2 : i64}
// CHECK-NEXT: %[[LOSS:.*]] = call @[[HEAD]](%[[A2]], %arg8, %arg9, %arg1) {het.layer = 3 : i64}
// CHECK-NEXT: return %[[LOSS]]

// The training step: the forward (linear+relu, fused into one op), the
// backward and the update of the hidden layers share one function each,
// however often they are called.
// STEP-LABEL: func.func @deep_train_step(
// STEP: call @[[FWD:het_outlined_[0-9a-f]+]]({{.*}}) {het.layer = 0 : i64}
// STEP-NEXT: call @[[FWD]]({{.*}}) {het.layer = 1 : i64}
// STEP-NEXT: call @[[FWD]]({{.*}}) {het.layer = 2 : i64}
// STEP-NEXT: call @[[HEAD:het_outlined_[0-9a-f]+]]({{.*}}) {het.layer = 3 : i64}
// STEP-NEXT: call @[[BWD:het_outlined_[0-9a-f]+]]({{.*}}) {het.layer = 2 : i64}
// STEP-NEXT: call @[[BWD]]({{.*}}) {het.layer = 1 : i64}
// STEP: call @[[UPDATE:het_outlined_[0-9a-f]+]]({{.*}}) {het.layer = 1 : i64}
// STEP-NEXT: call @[[UPDATE]]({{.*}}) {het.layer = 2 : i64}
// STEP-NOT: het.linear
// STEP: return

// Runs shorter than min-ops stay in place.
// MIN3: hetrt.outlined_calls = 0 : i64, hetrt.outlined_functions = 0 : i64
// MIN3-NOT: call
// MIN3: het.linear
