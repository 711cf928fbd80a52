// RUN: het-opt %s --het-fuse-elementwise -split-input-file | FileCheck %s

// An element-wise producer fuses into a consumer that uses each element
// once (here another element-wise op): one generic.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// A matrix product reads each element of its left operand once per output
// column: fusing the producer would compute it 16 times. It stays a
// generic of its own and the product stays out + in0 * in1 (what
// het-tile-contractions tiles and cuBLAS runs).
// CHECK-LABEL: func.func @product
// CHECK: %[[RELU:.*]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} ins(%[[RELU]], %arg1
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: arith.addf %[[O]], %[[P]]
func.func @product(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %init: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %zero = arith.constant 0.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%0, %w : tensor<8x4xf32>, tensor<4x16xf32>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// A producer that computes nothing (a broadcast) fuses anyway: only its
// buffer is saved.
// CHECK-LABEL: func.func @broadcast
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @broadcast(%v: tensor<16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%v : tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<8x16xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%0, %y : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// -----

// Per-channel factors (1 / sqrt(var + eps)) feeding a per-pixel
// normalization: computed once per channel, not once per pixel.
// CHECK-LABEL: func.func @per_channel
// CHECK: linalg.generic
// CHECK: math.sqrt
// CHECK: linalg.generic
// CHECK-NOT: math.sqrt
// CHECK: return
func.func @per_channel(%var: tensor<4xf32>, %x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %ec = tensor.empty() : tensor<4xf32>
  %e = tensor.empty() : tensor<2x4x8xf32>
  %eps = arith.constant 1.0e-5 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(c) -> (c)>, affine_map<(c) -> (c)>], iterator_types = ["parallel"]}
      ins(%var : tensor<4xf32>) outs(%ec : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %eps : f32
    %r = math.sqrt %s : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(n, c, w) -> (n, c, w)>, affine_map<(n, c, w) -> (c)>, affine_map<(n, c, w) -> (n, c, w)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %0 : tensor<2x4x8xf32>, tensor<4xf32>) outs(%e : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}
