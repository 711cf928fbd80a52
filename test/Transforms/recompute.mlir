// RUN: het-opt %s --het-training-pipeline="recompute=full recompute-report=true" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: het-opt %s --het-training-pipeline="recompute=selective recompute-report=true" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=SELECTIVE
// RUN: het-opt %s --het-training-pipeline="recompute=none recompute-layers=full,none" | FileCheck %s --check-prefix=LAYERS
// RUN: het-opt %s --het-training-pipeline | FileCheck %s --check-prefix=NONE
// RUN: not het-opt %s --het-training-pipeline="recompute=some" 2>&1 | FileCheck %s --check-prefix=BADMODE
// RUN: not het-opt %s --het-training-pipeline="recompute-layers=full,sometimes" 2>&1 | FileCheck %s --check-prefix=BADLAYER

// Layer 0: a product, a layer norm, a product; layer 1: the logits and the
// loss. Layer 0's output %b is layer 1's input: kept in every mode. What
// the backward reads without recomputation: %c, %b (4x8 f32, 128 bytes
// each), %a, %n (4x16, 256 each) and the statistics %m, %r (16 each): 800
// bytes. full keeps %b (128); selective keeps the products %a, %b, %c (512).
//
// full: the backward recomputes the logits (read by the loss's gradient)
// and layer 0 from its input %x: the first product and the layer norm
// whose output and statistics its gradients read. The clones carry
// het.recomputed and sit just before the first backward op reading them.
// FULL: remark: het-recompute: the backward recomputes 3 forward ops; the forward keeps 128 bytes for the backward (800 without recomputation)
// FULL-LABEL: func.func @two_train_step(
// FULL: %[[A:.*]] = het.linear %arg0, %arg2 {het.layer = 0 : i64}
// FULL: %[[N:.*]], %{{.*}}, %{{.*}} = het.layer_norm %[[A]]
// FULL: %[[B:.*]] = het.linear %[[N]], %arg3 {het.layer = 0 : i64}
// FULL: %[[C:.*]] = het.linear %[[B]], %arg4 {het.layer = 1 : i64}
// FULL: het.cross_entropy %[[C]]
// FULL: %[[C2:.*]] = het.linear %[[B]], %arg4 {het.layer = 1 : i64, het.recomputed}
// FULL: het.cross_entropy_grad %{{.*}}, %[[C2]], %arg1
// FULL: het.linear_grad %{{.*}}, %[[B]], %arg4
// FULL: %[[A2:.*]] = het.linear %arg0, %arg2 {het.layer = 0 : i64, het.recomputed}
// FULL: %[[N2:.*]], %[[M2:.*]], %[[R2:.*]] = het.layer_norm %[[A2]], %arg5, %arg6 {het.layer = 0 : i64, het.recomputed}
// FULL: het.linear_grad %{{.*}}, %[[N2]], %arg3
// FULL: het.layer_norm_grad %{{.*}}, %[[A2]], %arg5, %[[M2]], %[[R2]]
// FULL-NOT: het.recomputed

// selective: products' results stay; only the layer norm is recomputed,
// from the kept first product.
// SELECTIVE: remark: het-recompute: the backward recomputes 1 forward ops; the forward keeps 512 bytes for the backward (800 without recomputation)
// SELECTIVE-LABEL: func.func @two_train_step(
// SELECTIVE: %[[A:.*]] = het.linear %arg0, %arg2 {het.layer = 0 : i64}
// SELECTIVE: %[[C:.*]] = het.linear %{{.*}}, %arg4 {het.layer = 1 : i64}
// SELECTIVE: het.cross_entropy_grad %{{.*}}, %[[C]], %arg1
// SELECTIVE: %[[N2:.*]], %{{.*}}, %{{.*}} = het.layer_norm %[[A]], %arg5, %arg6 {het.layer = 0 : i64, het.recomputed}
// SELECTIVE: het.linear_grad %{{.*}}, %[[N2]], %arg3
// SELECTIVE-NOT: het.recomputed

// Per layer: layer 0 full, layer 1 none (the logits are kept).
// LAYERS-LABEL: func.func @two_train_step(
// LAYERS-NOT: het.linear %{{.*}}, %arg4 {het.layer = 1 : i64, het.recomputed}
// LAYERS: het.linear %arg0, %arg2 {het.layer = 0 : i64, het.recomputed}

// NONE-NOT: het.recomputed

// BADMODE: error: het-recompute: mode must be none, selective or full, got 'some'
// BADLAYER: error: het-recompute: layer-modes entry 1 must be none, selective or full, got 'sometimes'
func.func @two(%x: tensor<4x8xf32>, %labels: tensor<4xi64>, %w0: tensor<16x8xf32> {het.param},
               %w1: tensor<8x16xf32> {het.param}, %w2: tensor<8x8xf32> {het.param},
               %g0: tensor<16xf32> {het.param}, %b0: tensor<16xf32> {het.param}) -> tensor<f32> {
  %a = het.linear %x, %w0 {het.layer = 0 : i64} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
  %n, %m, %r = het.layer_norm %a, %g0, %b0 {het.layer = 0 : i64} : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<4x16xf32>, tensor<4xf32>, tensor<4xf32>
  %b = het.linear %n, %w1 {het.layer = 0 : i64} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  %c = het.linear %b, %w2 {het.layer = 1 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %loss = het.cross_entropy %c, %labels {het.layer = 1 : i64} : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
