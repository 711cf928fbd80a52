// RUN: het-opt %s | het-opt | FileCheck %s

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x24x8xf32>, %v: tensor<2x4x24x6xf32>,
                     %do: tensor<2x4x16x6xf32>)
    -> (tensor<2x4x16x6xf32>, tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32>) {
  // CHECK: %[[O:.*]] = het.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 1.250000e-01 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32> -> tensor<2x4x16x6xf32>
  %o = het.attention %q, %k, %v {causal, scale = 0.125 : f64}
      : tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32> -> tensor<2x4x16x6xf32>
  // CHECK: het.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]] {causal, scale = 1.250000e-01 : f64}
  // CHECK-SAME: -> tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32>
  %dq, %dk, %dv = het.attention_grad %do, %q, %k, %v, %o {causal, scale = 0.125 : f64}
      : tensor<2x4x16x6xf32>, tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32>,
        tensor<2x4x16x6xf32> -> tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32>
  return %o, %dq, %dk, %dv : tensor<2x4x16x6xf32>, tensor<2x4x16x8xf32>, tensor<2x4x24x8xf32>, tensor<2x4x24x6xf32>
}

// An unscaled, unmasked attention of plain matrices prints no attributes.
// CHECK-LABEL: func @plain
// CHECK: het.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<5x3xf32>, tensor<7x3xf32>, tensor<7x2xf32> -> tensor<5x2xf32>
func.func @plain(%q: tensor<5x3xf32>, %k: tensor<7x3xf32>, %v: tensor<7x2xf32>) -> tensor<5x2xf32> {
  %o = het.attention %q, %k, %v : tensor<5x3xf32>, tensor<7x3xf32>, tensor<7x2xf32> -> tensor<5x2xf32>
  return %o : tensor<5x2xf32>
}
