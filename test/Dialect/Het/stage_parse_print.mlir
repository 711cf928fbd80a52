// RUN: het-opt %s | het-opt | FileCheck %s

het.cluster @lab {
  het.device_group @a100 kind #het.device<nvidia, "sm_80"> count 8 memory_gib 80.0
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
