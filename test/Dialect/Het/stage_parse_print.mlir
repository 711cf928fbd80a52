// RUN: het-opt %s | het-opt | FileCheck %s

het.cluster @lab {
  het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 12 memory_gib 80.0
  het.device_group @mi250 kind #het.device<amd, "gfx90a"> count 8 memory_gib 64.0
}

// CHECK-LABEL: het.stage @s0 on @lab::@a100 replicas 8 layers [0, 2) (%{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<8x16xf32>) {
// CHECK: %[[Y:.*]] = het.linear
// CHECK: het.send %[[Y]] to @s1 : tensor<8x16xf32>
// CHECK: het.send %[[Y]] to @s1 {channel = 1 : i64} : tensor<8x16xf32>
// CHECK: het.yield %{{.*}} : tensor<16x16xf32>
het.stage @s0 on @lab::@a100 replicas 8 layers [0, 2) (%w: tensor<16x16xf32>, %x: tensor<8x16xf32>) {
  %y = het.linear %x, %w {het.layer = 1 : i64} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  het.send %y to @s1 : tensor<8x16xf32>
  het.send %y to @s1 {channel = 1 : i64} : tensor<8x16xf32>
  het.yield %w : tensor<16x16xf32>
}

// A stage with no inputs and no outputs prints no argument list and no yield.
// CHECK-LABEL: het.stage @s1 on @lab::@mi250 replicas 4 layers [2, 6) {
// CHECK-NEXT: het.recv from @s0 : tensor<8x16xf32>
// CHECK-NEXT: het.recv from @s0 {channel = 1 : i64} : tensor<8x16xf32>
// CHECK-NEXT: het.transfer
// CHECK-NEXT: }
het.stage @s1 on @lab::@mi250 replicas 4 layers [2, 6) {
  %a = het.recv from @s0 : tensor<8x16xf32>
  %b = het.recv from @s0 {channel = 1 : i64} : tensor<8x16xf32>
  %c = het.transfer %b : tensor<8x16xf32> from #het.device<nvidia, "sm_80"> to #het.device<amd, "gfx90a">
}

// Discardable attributes on a stage are kept.
// CHECK-LABEL: het.stage @s2 on @lab::@mi250 replicas 1 layers [6, 7) attributes {note = "tail"}
het.stage @s2 on @lab::@mi250 replicas 1 layers [6, 7) attributes {note = "tail"} {
}

// A stage whose replicas are of two kinds, each with its share of a
// micro-batch, split over 2 devices each (tensor parallelism).
// CHECK-LABEL: het.stage @s3 on @lab::@a100 replicas 1 samples 48, @lab::@mi250 replicas 1 samples 16 layers [7, 8) tensor_parallel 2 {
het.stage @s3 on @lab::@a100 replicas 1 samples 48, @lab::@mi250 replicas 1 samples 16 layers [7, 8) tensor_parallel 2 {
}

// Tensor-parallel groups and the ops that use them.
// CHECK-LABEL: het.tensor_parallel_group @tp2 size 2
// CHECK-LABEL: func.func @megatron
// CHECK: het.tensor_parallel_copy %{{.*}} over @tp2 : tensor<4x8xf32>
// CHECK: het.all_reduce %{{.*}} over @tp2 sum
// CHECK: het.embedding %{{.*}}, %{{.*}} {vocab_shard = @tp2}
het.tensor_parallel_group @tp2 size 2
func.func @megatron(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %t: tensor<16x8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = het.tensor_parallel_copy %x over @tp2 : tensor<4x8xf32>
  %y = het.linear %c, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = het.all_reduce %y over @tp2 sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %e = het.embedding %t, %i {vocab_shard = @tp2} : tensor<16x8xf32>, tensor<4xi64> -> tensor<4x8xf32>
  return %s, %e : tensor<4x8xf32>, tensor<4x8xf32>
}
