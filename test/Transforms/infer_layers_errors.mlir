// RUN: not het-opt %s -het-infer-layers=default-layer=-2 2>&1 | FileCheck %s

// CHECK: het-infer-layers: default-layer must be >= 0, got -2
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = het.relu %x : tensor<4xf32>
  return %a : tensor<4xf32>
}
