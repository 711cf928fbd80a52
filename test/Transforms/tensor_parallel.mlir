// RUN: het-opt %s --het-tensor-parallel="degree=2" | FileCheck %s
// RUN: het-opt %s --het-tensor-parallel="degree=2" --het-autodiff="optimizer=sgd" | FileCheck %s --check-prefix=GRAD
// RUN: het-opt %s --het-tensor-parallel="layer-degrees=1,2,1 layer-segments=0,1,2" | FileCheck %s --check-prefix=PERLAYER
// RUN: not het-opt %s --het-tensor-parallel="degree=4" 2>&1 | FileCheck %s --check-prefix=HEADS

// Megatron over 2 devices. The token embedding is split by vocabulary (its
// lookups joined by an all-reduce); attention's q/k/v projections are
// column-parallel (their input through a tensor_parallel_copy), so the
// reshape into heads keeps 1 of the 2 heads per device and the output
// projection is row-parallel (an all-reduce, then its bias); the MLP's first
// linear is column-parallel, its second row-parallel; the output layer is
// column-parallel by vocabulary and its logits are gathered for the loss.
// CHECK: het.tensor_parallel_group @tp2 size 2
// CHECK-LABEL: func.func @block(
// CHECK-SAME: %{{.*}}: tensor<32x32xf32> {het.param},
// CHECK-SAME: %[[WQ:.*]]: tensor<16x32xf32> {het.param}, %[[BQ:.*]]: tensor<16xf32> {het.param},
// CHECK-SAME: %{{.*}}: tensor<32x16xf32> {het.param}, %[[BO:.*]]: tensor<32xf32> {het.param},
// CHECK-SAME: %{{.*}}: tensor<64x32xf32> {het.param}, %{{.*}}: tensor<32x64xf32> {het.param}
// CHECK: %[[E:.*]] = het.embedding %{{.*}}, %{{.*}} {het.layer = 0 : i64, vocab_shard = @tp2} : tensor<32x32xf32>
// CHECK: het.all_reduce %[[E]] over @tp2 sum
// CHECK: %[[C:.*]] = het.tensor_parallel_copy %{{.*}} over @tp2
// CHECK: het.linear %[[C]], %[[WQ]], %[[BQ]] {{.*}} -> tensor<4x16x16xf32>
// CHECK: het.reshape {{.*}} : tensor<4x16x16xf32> -> tensor<4x16x1x16xf32>
// CHECK: het.softmax {{.*}} : tensor<4x1x16x16xf32>
// CHECK: het.reshape {{.*}} : tensor<4x16x1x16xf32> -> tensor<4x16x16xf32>
// CHECK: %[[P:.*]] = het.linear {{.*}} : tensor<4x16x16xf32>, tensor<32x16xf32> -> tensor<4x16x32xf32>
// CHECK: %[[R:.*]] = het.all_reduce %[[P]] over @tp2 sum
// CHECK: het.add %[[R]], %[[BO]]
// CHECK: het.linear {{.*}} : tensor<4x16x32xf32>, tensor<64x32xf32> -> tensor<4x16x64xf32>
// CHECK: het.gelu
// CHECK: het.linear {{.*}} : tensor<4x16x64xf32>, tensor<32x64xf32> -> tensor<4x16x32xf32>
// CHECK: het.all_reduce
// CHECK: %[[L:.*]] = het.linear {{.*}} -> tensor<4x16x32xf32>
// CHECK: %[[G:.*]] = het.all_gather %[[L]] over @tp2 axis 2 {{.*}} : tensor<4x16x32xf32> -> tensor<4x16x64xf32>
// CHECK: het.cross_entropy %[[G]]

// The backward pass gets its collectives from the gradient rules: the
// gathered logits' gradient is scattered back (a reduce-scatter average of
// the identical gradients), and the input gradient of each split region is
// all-reduced where its tensor_parallel_copy was.
// GRAD-LABEL: func.func @block_train_step(
// GRAD: het.reduce_scatter %{{.*}} over @tp2 avg axis 2 {het.layer = 2 : i64} : tensor<4x16x64xf32> -> tensor<4x16x32xf32>
// GRAD: het.all_reduce %{{.*}} over @tp2 sum {het.layer = 1 : i64}
// GRAD: het.embedding_grad %{{.*}}, %{{.*}} {het.layer = 0 : i64, vocab_shard = @tp2}

// Each layer at its own degree, each in its own stage: only layer 1 splits,
// and nothing split leaves it.
// PERLAYER-LABEL: func.func @block(
// PERLAYER-SAME: tensor<64x32xf32> {het.param}
// PERLAYER-NOT: vocab_shard
// PERLAYER: het.tensor_parallel_copy
// PERLAYER-NOT: het.all_gather

// HEADS: error: 'het.reshape' op in layer 1: tensor parallelism 4 does not divide the 2 parts (attention heads) that 32 split features are reshaped into

func.func @block(%tokens: tensor<4x16xi64>, %targets: tensor<4x16xi64>,
                 %wte: tensor<64x32xf32> {het.param},
                 %wq: tensor<32x32xf32> {het.param}, %bq: tensor<32xf32> {het.param},
                 %wo: tensor<32x32xf32> {het.param}, %bo: tensor<32xf32> {het.param},
                 %wfc: tensor<128x32xf32> {het.param}, %wproj: tensor<32x128xf32> {het.param},
                 %whead: tensor<64x32xf32> {het.param}) -> tensor<f32> {
  %x = het.embedding %wte, %tokens {het.layer = 0 : i64} : tensor<64x32xf32>, tensor<4x16xi64> -> tensor<4x16x32xf32>
  %q = het.linear %x, %wq, %bq {het.layer = 1 : i64} : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  %qs = het.reshape %q {het.layer = 1 : i64} : tensor<4x16x32xf32> -> tensor<4x16x2x16xf32>
  %qh = het.transpose %qs {permutation = array<i64: 0, 2, 1, 3>, het.layer = 1 : i64} : tensor<4x16x2x16xf32> -> tensor<4x2x16x16xf32>
  %s = het.matmul %qh, %qh {transpose_rhs, het.layer = 1 : i64} : tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32> -> tensor<4x2x16x16xf32>
  %p = het.softmax %s {causal, scale = 0.25 : f64, het.layer = 1 : i64} : tensor<4x2x16x16xf32>
  %o = het.matmul %p, %qh {het.layer = 1 : i64} : tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32> -> tensor<4x2x16x16xf32>
  %ot = het.transpose %o {permutation = array<i64: 0, 2, 1, 3>, het.layer = 1 : i64} : tensor<4x2x16x16xf32> -> tensor<4x16x2x16xf32>
  %om = het.reshape %ot {het.layer = 1 : i64} : tensor<4x16x2x16xf32> -> tensor<4x16x32xf32>
  %attn = het.linear %om, %wo, %bo {het.layer = 1 : i64} : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>
  %x1 = het.add %x, %attn {het.layer = 1 : i64} : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %fc = het.linear %x1, %wfc {het.layer = 1 : i64} : tensor<4x16x32xf32>, tensor<128x32xf32> -> tensor<4x16x128xf32>
  %act = het.gelu %fc {het.layer = 1 : i64} : tensor<4x16x128xf32>
  %proj = het.linear %act, %wproj {het.layer = 1 : i64} : tensor<4x16x128xf32>, tensor<32x128xf32> -> tensor<4x16x32xf32>
  %x2 = het.add %x1, %proj {het.layer = 1 : i64} : tensor<4x16x32xf32>, tensor<4x16x32xf32> -> tensor<4x16x32xf32>
  %logits = het.linear %x2, %whead {het.layer = 2 : i64} : tensor<4x16x32xf32>, tensor<64x32xf32> -> tensor<4x16x64xf32>
  %loss = het.cross_entropy %logits, %targets {het.layer = 2 : i64} : tensor<4x16x64xf32>, tensor<4x16xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
