// RUN: het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=fp32 layer-precisions=fp16,bf16}))' | FileCheck %s
// RUN: het-opt %s --pass-pipeline='builtin.module(func.func(het-autocast{precision=fp32 layer-precisions=fp16,bf16 f32-boundaries=1},canonicalize))' | FileCheck %s --check-prefix=BOUNDARY

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

// With f32-boundaries=1 (layer 0 ends a pipeline stage whose replicas
// train in different formats) the fp16 activation leaves layer 0 in f32,
// cast in layer 0 and marked so that canonicalization does not fold it
// into layer 1's cast to bf16: the stage sends f32 in every format.
// BOUNDARY-LABEL: func.func @three(
// BOUNDARY: %[[A:.*]] = het.relu {{.*}}: tensor<4x8xf16>
// BOUNDARY: %[[W:.*]] = het.cast %[[A]] {het.f32_boundary, het.layer = 0 : i64} : tensor<4x8xf16> -> tensor<4x8xf32>
// BOUNDARY: %[[B:.*]] = het.cast %[[W]] {het.layer = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xbf16>
// BOUNDARY: het.linear %[[B]], {{.*}}{het.layer = 1 : i64} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
