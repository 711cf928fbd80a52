// RUN: het-opt %s --convert-het-to-linalg -split-input-file -verify-diagnostics
// RUN: not het-opt %s --convert-het-to-linalg="library=mkl" -split-input-file 2>&1 | FileCheck %s
// CHECK: convert-het-to-linalg: library must be 'dnnl', 'reference', 'mlir' or 'cudnn', got 'mkl'

func.func @f64_library_op(%x: tensor<8x4xf64>, %w: tensor<3x4xf64>) -> tensor<8x3xf64> {
  // expected-error @below {{CPU code generation supports f32, bf16 and f16 data (and i64 indices), got 'tensor<8x4xf64>'}}
  %y = het.linear %x, %w : tensor<8x4xf64>, tensor<3x4xf64> -> tensor<8x3xf64>
  return %y : tensor<8x3xf64>
}

// -----

het.cluster @lab {
  het.device_group @four kind #het.device<amd, "gfx90a"> count 4 memory_gib 64.0
}
func.func @collective(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @below {{'het.all_reduce' op is not supported by the CPU code generator}}
  %0 = het.all_reduce %x over @lab::@four sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
