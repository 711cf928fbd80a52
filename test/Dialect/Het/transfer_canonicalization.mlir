// RUN: het-opt %s -canonicalize | FileCheck %s

// CHECK-LABEL: func @same_kind
// CHECK-NEXT: return %arg0
func.func @same_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = het.transfer %x : tensor<4xf32> from #het.device<amd, "gfx90a"> to #het.device<amd, "gfx90a">
  return %0 : tensor<4xf32>
}

// Same vendor, different architecture: a real move, kept.
// CHECK-LABEL: func @other_arch
// CHECK-NEXT: het.transfer %arg0 : tensor<4xf32> from #het.device<nvidia, "sm_80"> to #het.device<nvidia, "sm_90">
func.func @other_arch(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = het.transfer %x : tensor<4xf32> from #het.device<nvidia, "sm_80"> to #het.device<nvidia, "sm_90">
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func @chain
// CHECK-NEXT: %[[T:.*]] = het.transfer %arg0 : tensor<4xf32> from #het.device<nvidia, "sm_80"> to #het.device<cpu, "x86_64">
// CHECK-NEXT: return %[[T]]
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = het.transfer %x : tensor<4xf32> from #het.device<nvidia, "sm_80"> to #het.device<amd, "gfx90a">
  %1 = het.transfer %0 : tensor<4xf32> from #het.device<amd, "gfx90a"> to #het.device<cpu, "x86_64">
  return %1 : tensor<4xf32>
}

// A round trip back to the starting kind vanishes entirely.
// CHECK-LABEL: func @round_trip
// CHECK-NEXT: return %arg0
func.func @round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = het.transfer %x : tensor<4xf32> from #het.device<nvidia, "sm_80"> to #het.device<amd, "gfx90a">
  %1 = het.transfer %0 : tensor<4xf32> from #het.device<amd, "gfx90a"> to #het.device<nvidia, "sm_80">
  return %1 : tensor<4xf32>
}
