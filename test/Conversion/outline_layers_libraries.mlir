// RUN: het-opt %s --het-outline-layers | FileCheck %s

// Identical runs in stage functions of different kernel libraries (a
// pipeline with a cpu.onednn and a cpu.mlir stage) are not shared: each
// outlined function keeps the library of the function it came from, and
// convert-het-to-linalg lowers it with that library.
func.func @s0_forward(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>)
    -> tensor<8x16xf32> attributes {het.kernel_library = "dnnl"} {
  %h = het.linear %x, %w, %b {het.layer = 0 : i64}
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %a = het.relu %h {het.layer = 0 : i64} : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}
func.func @s1_forward(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>)
    -> tensor<8x16xf32> attributes {het.kernel_library = "mlir"} {
  %h = het.linear %x, %w, %b {het.layer = 1 : i64}
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %a = het.relu %h {het.layer = 1 : i64} : tensor<8x16xf32>
  return %a : tensor<8x16xf32>
}
// A constant too large to fold into the code is passed as an argument.
func.func @scaled(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %big = arith.constant dense<2.0> : tensor<8x16xf32>
  %s = het.mul %x, %big {het.layer = 0 : i64} : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %r = het.relu %s {het.layer = 0 : i64} : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// CHECK: hetrt.outlined_calls = 3 : i64, hetrt.outlined_functions = 3 : i64
// CHECK: func.func private @[[DNNL:het_outlined_[0-9a-f]+]]({{.*}}) -> tensor<8x16xf32> attributes {het.kernel_library = "dnnl", hetrt.outlined}
// CHECK-LABEL: func.func @s0_forward(
// CHECK-NEXT: call @[[DNNL]]
// CHECK: func.func private @[[MLIR:het_outlined_[0-9a-f]+]]({{.*}}) -> tensor<8x16xf32> attributes {het.kernel_library = "mlir", hetrt.outlined}
// CHECK-LABEL: func.func @s1_forward(
// CHECK-NEXT: call @[[MLIR]]
// CHECK: func.func private @[[SCALED:het_outlined_[0-9a-f]+]](%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32> attributes {hetrt.outlined}
// CHECK-LABEL: func.func @scaled(
// CHECK-NEXT: %[[BIG:.*]] = arith.constant dense<2.0
// CHECK-NEXT: call @[[SCALED]](%arg0, %[[BIG]]) {het.layer = 0 : i64}
