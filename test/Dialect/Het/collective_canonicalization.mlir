// RUN: het-opt %s -canonicalize | FileCheck %s

het.cluster @lab {
  het.device_group @one kind #het.device<nvidia, "sm_80"> count 1 memory_gib 80.0
  het.device_group @four kind #het.device<amd, "gfx90a"> count 4 memory_gib 64.0
}

// Every collective over a single member is its input.
// CHECK-LABEL: het.stage @solo
// CHECK-NEXT: het.yield %arg0, %arg0, %arg0, %arg0, %arg0, %arg0 :
het.stage @solo on @lab::@one replicas 1 layers [0, 1) (%x: tensor<8x4xf32>) {
  %0 = het.all_reduce %x over @solo sum algorithm ring compression int8 : tensor<8x4xf32> -> tensor<8x4xf32>
  %1 = het.all_reduce %0 over @lab::@one avg : tensor<8x4xf32> -> tensor<8x4xf32>
  %2 = het.reduce_scatter %x over @solo sum axis 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %3 = het.all_gather %x over @solo axis 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %4 = het.broadcast %x over @lab::@one root 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %5 = het.all_to_all %x over @solo split 0 concat 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  het.yield %1, %1, %2, %3, %4, %5 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// Over several members they stay.
// CHECK-LABEL: het.stage @many
// CHECK: het.all_reduce
// CHECK: het.all_gather
// CHECK: het.broadcast
het.stage @many on @lab::@four replicas 4 layers [0, 1) (%x: tensor<8x4xf32>) {
  %0 = het.all_reduce %x over @many sum : tensor<8x4xf32> -> tensor<8x4xf32>
  %1 = het.all_gather %0 over @lab::@four axis 0 : tensor<8x4xf32> -> tensor<32x4xf32>
  %2 = het.broadcast %x over @many root 3 : tensor<8x4xf32> -> tensor<8x4xf32>
  het.yield %1, %2 : tensor<32x4xf32>, tensor<8x4xf32>
}
