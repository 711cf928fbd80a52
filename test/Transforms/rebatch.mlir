// RUN: het-opt %s --het-rebatch="samples=6" | FileCheck %s
// RUN: het-opt %s --het-rebatch="samples=6 micro-batch=16" | FileCheck %s --check-prefix=WEIGHTED
// RUN: not het-opt %s --het-rebatch="samples=20 micro-batch=16" 2>&1 | FileCheck %s --check-prefix=LARGER
// RUN: not het-opt %s --het-rebatch 2>&1 | FileCheck %s --check-prefix=NOSAMPLES

// A GPT-like model at batch 4 specialised to 6 samples: the token ids, the
// reshapes that split the features into heads (batch outermost) and fold the
// batch into rows, and the broadcast that adds a batch dimension follow; the
// position ids (not one per sample) and the parameters keep their shapes.
// CHECK-LABEL: func.func @model(
// CHECK-SAME: %{{.*}}: tensor<6x16xi64>, %{{.*}}: tensor<6x16xi64>, %{{.*}}: tensor<16xi64>, %{{.*}}: tensor<64x32xf32> {het.param}
// CHECK: het.embedding {{.*}} -> tensor<6x16x32xf32>
// CHECK: het.reshape {{.*}} : tensor<6x16x32xf32> -> tensor<6x16x2x16xf32>
// CHECK: het.reshape {{.*}} : tensor<6x16x2x16xf32> -> tensor<96x32xf32>
// CHECK: het.broadcast_to {{.*}} : tensor<16x32xf32> -> tensor<6x16x32xf32>
// CHECK: het.cross_entropy {{.*}} : tensor<6x16x64xf32>, tensor<6x16xi64> -> tensor<f32>
// CHECK-NOT: het.mul
// CHECK: return

// A replica taking 6 of a micro-batch's 16 samples: its loss is its share of
// the micro-batch's mean.
// WEIGHTED: %[[LOSS:.*]] = het.cross_entropy
// WEIGHTED: %[[W:.*]] = arith.constant dense<3.750000e-01> : tensor<f32>
// WEIGHTED: %[[S:.*]] = het.mul %[[LOSS]], %[[W]] {het.layer = 3 : i64}
// WEIGHTED: return %[[S]]

// LARGER: error: het-rebatch: a share of 20 samples is larger than the micro-batch of 16
// NOSAMPLES: error: het-rebatch needs samples >= 1, got 0

func.func @model(%tokens: tensor<4x16xi64>, %targets: tensor<4x16xi64>, %positions: tensor<16xi64>,
                 %wte: tensor<64x32xf32> {het.param}, %wpe: tensor<16x32xf32> {het.param}) -> tensor<f32> {
  %tok = het.embedding %wte, %tokens {het.layer = 0 : i64} : tensor<64x32xf32>, tensor<4x16xi64> -> tensor<4x16x32xf32>
  %pos = het.embedding %wpe, %positions {het.layer = 0 : i64} : tensor<16x32xf32>, tensor<16xi64> -> tensor<16x32xf32>
  %heads = het.reshape %tok {het.layer = 1 : i64} : tensor<4x16x32xf32> -> tensor<4x16x2x16xf32>
  %rows = het.reshape %heads {het.layer = 1 : i64} : tensor<4x16x2x16xf32> -> tensor<64x32xf32>
  %back = het.reshape %rows {het.layer = 2 : i64} : tensor<64x32xf32> -> tensor<4x16x32xf32>
  %posb = het.broadcast_to %pos {het.layer = 2 : i64} : tensor<16x32xf32> -> tensor<4x16x32xf32>
  %x = het.add %back, %posb {het.layer = 2 : i64} : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %logits = het.linear %x, %wte {het.layer = 3 : i64} : tensor<4x16x32xf32>, tensor<64x32xf32> -> tensor<4x16x64xf32>
  %loss = het.cross_entropy %logits, %targets {het.layer = 3 : i64} : tensor<4x16x64xf32>, tensor<4x16xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
