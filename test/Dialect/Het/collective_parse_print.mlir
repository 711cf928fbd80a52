// RUN: het-opt %s | het-opt | FileCheck %s
// RUN: het-opt %s --mlir-print-op-generic | het-opt | FileCheck %s

het.cluster @lab {
  het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 4 memory_gib 80.0
}

het.stage @s0 on @lab::@a100 replicas 4 layers [0, 1) (%g: tensor<64x32xf32>, %i: tensor<8xi32>) {
  // Defaults (algorithm auto, no compression) are not printed.
  // CHECK: het.all_reduce %{{.*}} over @s0 sum : tensor<64x32xf32> -> tensor<64x32xf32>
  %0 = het.all_reduce %g over @s0 sum algorithm auto compression none : tensor<64x32xf32> -> tensor<64x32xf32>
  // CHECK: het.all_reduce %{{.*}} over @s0 avg algorithm ring compression int8 : tensor<64x32xf32> -> tensor<64x32xf32>
  %1 = het.all_reduce %g over @s0 avg algorithm ring compression int8 : tensor<64x32xf32> -> tensor<64x32xf32>
  // CHECK: het.all_reduce %{{.*}} over @s0 sum algorithm hierarchical compression topk(1.000000e-02) : tensor<64x32xf32> -> tensor<64x32xf32>
  %2 = het.all_reduce %g over @s0 sum algorithm hierarchical compression topk(0.01) : tensor<64x32xf32> -> tensor<64x32xf32>
  // CHECK: het.all_reduce %{{.*}} over @lab::@a100 max algorithm tree : tensor<8xi32> -> tensor<8xi32>
  %3 = het.all_reduce %i over @lab::@a100 max algorithm tree : tensor<8xi32> -> tensor<8xi32>
  // CHECK: het.all_reduce %{{.*}} over @s0 prod algorithm halving_doubling : tensor<8xi32> -> tensor<8xi32>
  %4 = het.all_reduce %i over @s0 prod algorithm halving_doubling : tensor<8xi32> -> tensor<8xi32>
  // CHECK: het.all_reduce %{{.*}} over @s0 min algorithm ps compression bf16 : tensor<64x32xf32> -> tensor<64x32xf32>
  %5 = het.all_reduce %g over @s0 min algorithm ps compression bf16 : tensor<64x32xf32> -> tensor<64x32xf32>
  // CHECK: het.reduce_scatter %{{.*}} over @s0 sum axis 0 compression fp16 : tensor<64x32xf32> -> tensor<16x32xf32>
  %6 = het.reduce_scatter %g over @s0 sum axis 0 compression fp16 : tensor<64x32xf32> -> tensor<16x32xf32>
  // CHECK: het.all_gather %{{.*}} over @s0 axis 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  %7 = het.all_gather %6 over @s0 axis 0 : tensor<16x32xf32> -> tensor<64x32xf32>
  // CHECK: het.broadcast %{{.*}} over @s0 root 3 : tensor<64x32xf32> -> tensor<64x32xf32>
  %8 = het.broadcast %g over @s0 root 3 : tensor<64x32xf32> -> tensor<64x32xf32>
  // CHECK: het.all_to_all %{{.*}} over @s0 split 0 concat 1 : tensor<64x32xf32> -> tensor<16x128xf32>
  %9 = het.all_to_all %g over @s0 split 0 concat 1 : tensor<64x32xf32> -> tensor<16x128xf32>
  // CHECK: het.all_gather %{{.*}} over @s0 axis 1 algorithm ring {het.layer = 0 : i64} : tensor<16x32xf32> -> tensor<16x128xf32>
  %10 = het.all_gather %6 over @s0 axis 1 algorithm ring {het.layer = 0 : i64} : tensor<16x32xf32> -> tensor<16x128xf32>
}
