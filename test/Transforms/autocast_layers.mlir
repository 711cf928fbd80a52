// RUN: het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=fp32 layer-precisions=fp16,bf16}))' | FileCheck %s

// Layers of different formats (a pipeline whose first stage trains on an
// fp16 kind and its second on a bf16 one): each layer's products in its
// own format; the fp16 activation entering the bf16 layer is cast to
// bf16; layer 2, past the list, takes `precision` (fp32: no casts).
// CHECK-LABEL: func.func @three(
// CHECK: het.linear {{.*}}{het.layer = 0 : i64} : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
// CHECK: %[[A:.*]] = het.relu {{.*}}: tensor<4x8xf16>
// CHECK: %[[B:.*]] = het.cast %[[A]] {het.layer = 1 : i64} : tensor<4x8xf16> -> tensor<4x8xbf16>
// CHECK: het.linear %[[B]], {{.*}}{het.layer = 1 : i64} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[C:.*]] = het.cast {{.*}} : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: het.linear %[[C]], %{{[a-z0-9]+}} {het.layer = 2 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
func.func @three(%x: tensor<4x8xf32>, %labels: tensor<4xi64>, %w0: tensor<8x8xf32> {het.param},
                 %w1: tensor<8x8xf32> {het.param}, %w2: tensor<8x8xf32> {het.param}) -> tensor<f32> {
  %a = het.linear %x, %w0 {het.layer = 0 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %r = het.relu %a {het.layer = 0 : i64} : tensor<4x8xf32>
  %b = het.linear %r, %w1 {het.layer = 1 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %c = het.linear %b, %w2 {het.layer = 2 : i64} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %loss = het.cross_entropy %c, %labels {het.layer = 2 : i64} : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}
