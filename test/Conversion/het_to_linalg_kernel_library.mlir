// The second split is an error, hence `not`: the first is printed all the same.
// RUN: not het-opt %s --convert-het-to-linalg="library=reference" -split-input-file 2>/dev/null | FileCheck %s
// RUN: not het-opt %s --convert-het-to-linalg -split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD
//
// A function's het.kernel_library overrides the pass option for the ops
// inside it, so one module holds pipeline stages compiled for different
// device kinds (cpu.onednn, cpu.mlir) next to one on the default.
//
// The dialect verifies the attribute itself (an unknown library is an error
// when the module is read, naming the value).

// CHECK-LABEL: func.func @stage_onednn
// CHECK: call @hetrt_dnnl_linear(
// CHECK-LABEL: func.func @stage_mlir
// CHECK-NOT: call
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-LABEL: func.func @stage_default
// CHECK: call @hetrt_ref_linear(
// CHECK-DAG: func.func private @hetrt_dnnl_linear(
// CHECK-DAG: func.func private @hetrt_ref_linear(
func.func @stage_onednn(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32>
    attributes {het.kernel_library = "dnnl"} {
  %y = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
func.func @stage_mlir(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32>
    attributes {het.kernel_library = "mlir"} {
  %y = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
func.func @stage_default(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32> {
  %y = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// An unknown library is an error naming the function.
// BAD: error: 'het.kernel_library' must be "dnnl", "reference", "mlir" or "cudnn", got "mkl"
func.func @stage_mkl(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32>
    attributes {het.kernel_library = "mkl"} {
  %y = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
