// RUN: het-opt %s | het-opt | FileCheck %s

het.cluster @c {
  het.device_group @g kind #het.device<cpu, "x86_64"> count 2 memory_gib 16.0
}

// het.layer is accepted on any op (compute, collectives, upstream ops) and
// het.param on any function argument of float tensor type.
// CHECK-LABEL: func @annotated
// CHECK-SAME: %{{.*}}: tensor<4x4xf32> {het.param}
func.func @annotated(%w: tensor<4x4xf32> {het.param}, %x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: arith.constant {het.layer = 0 : i64} dense<0.000000e+00>
  %z = arith.constant {het.layer = 0 : i64} dense<0.0> : tensor<2x4xf32>
  // CHECK: het.linear {{.*}} {het.layer = 12 : i64}
  %y = het.linear %x, %w {het.layer = 12 : i64} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  // CHECK: het.all_reduce {{.*}} over @c::@g sum {het.layer = 12 : i64}
  %r = het.all_reduce %y over @c::@g sum {het.layer = 12 : i64} : tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// A declaration may carry het.param too.
// CHECK: func.func private @external(tensor<8xbf16> {het.param})
func.func private @external(tensor<8xbf16> {het.param})
