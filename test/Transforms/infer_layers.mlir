// RUN: het-opt %s -het-infer-layers -split-input-file | FileCheck %s
// RUN: het-opt %s -het-infer-layers=default-layer=5 -split-input-file | FileCheck %s --check-prefix=DEFAULT

// Unannotated ops take the deepest layer among their producers.
// CHECK-LABEL: func @propagate
// CHECK: het.linear {{.*}} {het.layer = 0 : i64}
// CHECK: het.relu {{.*}} {het.layer = 0 : i64}
// CHECK: het.linear {{.*}} {het.layer = 3 : i64}
// CHECK: het.add {{.*}} {het.layer = 3 : i64}
// CHECK: het.cross_entropy {{.*}} {het.layer = 3 : i64}
func.func @propagate(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>, %y: tensor<2xi64>) -> tensor<f32> {
  %h = het.linear %x, %w {het.layer = 0 : i64} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %a = het.relu %h : tensor<2x4xf32>
  %g = het.linear %a, %w {het.layer = 3 : i64} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %s = het.add %a, %g : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %l = het.cross_entropy %s, %y : tensor<2x4xf32>, tensor<2xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Ops fed only by arguments take the default layer; annotations are kept.
// CHECK-LABEL: func @defaults
// CHECK: het.relu {{.*}} {het.layer = 0 : i64}
// CHECK: het.gelu {{.*}} {het.layer = 7 : i64}
// DEFAULT-LABEL: func @defaults
// DEFAULT: het.relu {{.*}} {het.layer = 5 : i64}
// DEFAULT: het.gelu {{.*}} {het.layer = 7 : i64}
func.func @defaults(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = het.relu %x : tensor<4xf32>
  %b = het.gelu %x {het.layer = 7 : i64} : tensor<4xf32>
  return %a : tensor<4xf32>
}
