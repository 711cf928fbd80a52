// RUN: het-opt %s | het-opt | FileCheck %s
// RUN: het-opt %s --mlir-print-op-generic | het-opt | FileCheck %s

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[R:.*]] = het.relu %{{.*}} : tensor<4x8xf32>
  %r = het.relu %x : tensor<4x8xf32>
  // CHECK: het.gelu %[[R]] : tensor<4x8xf32>
  %g = het.gelu %r : tensor<4x8xf32>
  // CHECK: het.gelu %{{.*}} {approximate = #het.gelu_approximation<tanh>} : tensor<4x8xf32>
  %t = het.gelu %g {approximate = #het.gelu_approximation<tanh>} : tensor<4x8xf32>
  // CHECK: het.relu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %dr = het.relu_grad %dy, %x : tensor<4x8xf32>
  // CHECK: het.gelu_grad %{{.*}}, %{{.*}} {approximate = #het.gelu_approximation<tanh>} : tensor<4x8xf32>
  %dg = het.gelu_grad %dr, %x {approximate = #het.gelu_approximation<tanh>} : tensor<4x8xf32>
  return %dg : tensor<4x8xf32>
}

// CHECK-LABEL: func @broadcasting
func.func @broadcasting(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  // CHECK: het.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %0 = het.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: het.mul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %1 = het.mul %0, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // CHECK: het.sub %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = het.sub %c, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// CHECK-LABEL: func @dynamic_and_low_precision
func.func @dynamic_and_low_precision(%a: tensor<?x8xbf16>, %b: tensor<8xbf16>, %h: tensor<2xf16>) -> tensor<?x8xbf16> {
  // CHECK: het.add %{{.*}}, %{{.*}} : tensor<?x8xbf16>, tensor<8xbf16> -> tensor<?x8xbf16>
  %0 = het.add %a, %b : tensor<?x8xbf16>, tensor<8xbf16> -> tensor<?x8xbf16>
  // CHECK: het.relu %{{.*}} : tensor<2xf16>
  %1 = het.relu %h : tensor<2xf16>
  return %0 : tensor<?x8xbf16>
}
