// RUN: het-opt %s --het-split-innermost-reductions -split-input-file | FileCheck %s

// Batch norm's per-channel sum over [N, C, H, W]: partial sums per column
// w (parallel and innermost, so vectorizable), the channel loop outermost,
// the sums over n and h in their order; then the 16 columns summed into
// the output, which keeps its initial value.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>
// CHECK-DAG: #[[P:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @channel_sum
// CHECK: %[[ZEROS:.*]] = linalg.fill {{.*}} -> tensor<3x16xf32>
// CHECK: %[[PARTIAL:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[X]], #[[P]]], iterator_types = ["parallel", "reduction", "reduction", "parallel"]} ins(%arg0, %arg0 : {{.*}}) outs(%[[ZEROS]] : tensor<3x16xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf %out, %
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[OUT]]], iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<3x16xf32>) outs(%arg1 : tensor<3xf32>)
// CHECK:   arith.addf %out, %in
func.func @channel_sum(%x: tensor<4x3x8x16xf32>, %init: tensor<3xf32>) -> tensor<3xf32> {
  %s = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>],
                       iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x, %x : tensor<4x3x8x16xf32>, tensor<4x3x8x16xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %o, %p : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// -----

// A sum to a scalar (`v + out`: the operand order is kept) of a kept unit
// dimension: partial sums [1, W].
// CHECK-LABEL: func.func @total
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} outs(%{{.*}} : tensor<1x32xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} outs(%arg1 : tensor<1xf32>)
// CHECK:   arith.addf %in, %out
func.func @total(%x: tensor<64x32xf32>, %init: tensor<1xf32>) -> tensor<1xf32> {
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (0)>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<64x32xf32>) outs(%init : tensor<1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1xf32>
  return %s : tensor<1xf32>
}

// -----

// Left alone: a row sum (one reduction: the partial sums would be the input
// again), a sum whose innermost dimension is parallel (vectorizable as it
// is), a short innermost dimension, a maximum (not out + v) and a sum that
// reads the innermost dimension with a stride.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
func.func @left_alone(%x: tensor<64x32xf32>, %rows: tensor<64xf32>, %cols: tensor<32xf32>,
                      %short: tensor<64x32x4xf32>, %one: tensor<f32>, %t: tensor<32x64xf32>)
    -> (tensor<64xf32>, tensor<32xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<64x32xf32>) outs(%rows : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<64x32xf32>) outs(%cols : tensor<32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> ()>], iterator_types = ["reduction", "reduction", "reduction"]}
      ins(%short : tensor<64x32x4xf32>) outs(%one : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %3 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<64x32xf32>) outs(%one : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %4 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%t : tensor<32x64xf32>) outs(%one : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %0, %1, %2, %3, %4 : tensor<64xf32>, tensor<32xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// A lone innermost reduction at least 128 long and a multiple of 16 (a
// loss's sum of exponentials over a vocabulary): each row is viewed as
// blocks of 16 lanes (no copy), summed per lane over the blocks, then the
// 16 lanes into the output. Shorter rows (the 32 of @left_alone above) and
// lengths that are no multiple of 16 stay one loop.
// CHECK-LABEL: func.func @long_rows
// CHECK: %[[VIEW:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [4, 16, 16] : tensor<4x256xf32> into tensor<4x16x16xf32>
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK: %[[PARTIAL:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[VIEW]], %arg1 : tensor<4x16x16xf32>, tensor<4xf32>) outs(%[[ZEROS]] : tensor<4x16xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<4x16xf32>) outs(%arg2 : tensor<4xf32>)
// CHECK-LABEL: func.func @odd_rows
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @long_rows(%x: tensor<4x256xf32>, %m: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x256xf32>, tensor<4xf32>) outs(%out : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %e = math.exp %d : f32
    %r = arith.addf %o, %e : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @odd_rows(%x: tensor<4x200xf32>, %out: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x200xf32>) outs(%out : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %o, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
