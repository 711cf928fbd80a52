// RUN: het-opt %s --convert-het-to-linalg="library=mlir" -split-input-file | FileCheck %s

// library=mlir (the cpu.mlir device kind) generates matmul, linear layers
// and groups == 1 convolutions as linalg contractions: no libhetrt call.
// A batched matmul with transpose_rhs: rhs is transposed once so that the
// innermost loop (n, the last iteration dimension) reads it contiguously;
// (batch, m, k, n) with k the reduction.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @matmul_transpose_rhs
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x8x16xf32>) outs(%{{.*}} : tensor<2x16x8xf32>) permutation = [0, 2, 1]
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[T]] : {{.*}}) outs(%[[Z]] : tensor<2x4x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: hetrt_
// CHECK: return
func.func @matmul_transpose_rhs(%a: tensor<2x4x16xf32>, %b: tensor<2x8x16xf32>) -> tensor<2x4x8xf32> {
  %s = het.matmul %a, %b {transpose_rhs} : tensor<2x4x16xf32>, tensor<2x8x16xf32> -> tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

// transpose_lhs is a permuted lhs map; a plain-matrix rhs is shared by the
// batch (its map has no batch dimension).
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-LABEL: func.func @matmul_shared_rhs
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], {{.*}}], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-NOT: hetrt_
// CHECK: return
func.func @matmul_shared_rhs(%a: tensor<2x4x8xf32>, %p: tensor<4x6xf32>) -> tensor<2x8x6xf32> {
  %t = het.matmul %a, %p {transpose_lhs} : tensor<2x4x8xf32>, tensor<4x6xf32> -> tensor<2x8x6xf32>
  return %t : tensor<2x8x6xf32>
}

// -----

// linear: the accumulator starts at the broadcast bias (as the evaluator's
// sum does), x [rows, in] times W^T over (r, i, o), then the fused ReLU.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @linear_relu
// CHECK: linalg.transpose ins(%{{.*}} : tensor<3x4xf32>) outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<3xf32>) outs(%{{.*}} : tensor<8x3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[X]], #[[WT]], #[[Y]]], iterator_types = ["parallel", "reduction", "parallel"]} {{.*}} outs(%[[B]] : tensor<8x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[SUM]] : tensor<8x3xf32>)
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK-NOT: hetrt_
// CHECK: return
func.func @linear_relu(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<8x3xf32> {
  %y = het.linear %x, %w, %b {activation = #het.activation<relu>} : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// linear_grad: dx = dy W over (r, o, i), dW = dy^T x over (o, r, i), db the
// column sums of dy; three results always.
// CHECK-DAG: #[[DYT:.*]] = affine_map<(d0, d1, d2) -> (d1, d0)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @linear_grad
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<8x3xf32>, tensor<3x4xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[DYT]], {{.*}}], iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<8x3xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[COL]]], iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : tensor<8x3xf32>) outs(%{{.*}} : tensor<3xf32>)
// CHECK-NOT: hetrt_
// CHECK: return
func.func @linear_grad(%dy: tensor<8x3xf32>, %x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) {
  %dx, %dw, %db = het.linear_grad %dy, %x, %w : tensor<8x3xf32>, tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>
  return %dx, %dw, %db : tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>
}

// -----

// conv2d (stride 2, padding 1, dilation 2, bias): the input inserted into
// zeros (a fill, then tensor.insert_slice), then one contraction over
// (n, f, c, kh, kw, oh, ow) reading (n, c, oh*2 + kh*2, ow*2 + kw*2), then
// the bias.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, d5 * 2 + d3 * 2, d6 * 2 + d4 * 2)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2, d3, d4)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d5, d6)>
// CHECK-LABEL: func.func @conv2d
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<2x3x11x11xf32>
// CHECK: %[[P:.*]] = tensor.insert_slice %arg0 into %[[Z]][0, 0, 1, 1] [2, 3, 9, 9] [1, 1, 1, 1] : tensor<2x3x9x9xf32> into tensor<2x3x11x11xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[Y]]], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction", "parallel", "parallel"]} ins(%[[P]], %{{.*}} : tensor<2x3x11x11xf32>, tensor<4x3x3x3xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x4x4xf32>, tensor<4xf32>)
// CHECK-NOT: hetrt_
// CHECK: return
func.func @conv2d(%x: tensor<2x3x9x9xf32>, %k: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x4x4xf32> {
  %y = het.conv2d %x, %k, %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 2>}
      : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// -----

// conv2d_grad_filter: partial sums per output column over (f, c, kh, kw,
// n, oh, ow) into [F, C, KH, KW, OW] (ow parallel and innermost, so the loop
// vectorizes), then the sum over ow.
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d5 * 2 + d2 * 2, d6 * 2 + d3 * 2)>
// CHECK-DAG: #[[PART:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d6)>
// CHECK-LABEL: func.func @conv2d_grad_filter
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[X]], #[[PART]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]} {{.*}} outs(%{{.*}} : tensor<4x3x3x3x4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[P]] : tensor<4x3x3x3x4xf32>) outs(%{{.*}} : tensor<4x3x3x3xf32>)
// CHECK-NOT: hetrt_
// CHECK: return
func.func @conv2d_grad_filter(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x3x9x9xf32>) -> tensor<4x3x3x3xf32> {
  %dw = het.conv2d_grad_filter %dy, %x {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 2>}
      : tensor<2x4x4x4xf32>, tensor<2x3x9x9xf32> -> tensor<4x3x3x3xf32>
  return %dw : tensor<4x3x3x3xf32>
}

// -----

// conv2d_grad_input: dy spread out by the stride (a strided insert_slice
// into zeros) in a border of (K-1)d - p = 3, the filter flipped (K-1-k maps) into [C, F,
// KH, KW], then a stride-1 correlation.
// CHECK-DAG: #[[FLIP:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, -d2 + 2, -d3 + 2)>
// CHECK-DAG: #[[SPREAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, d5 + d3 * 2, d6 + d4 * 2)>
// CHECK-LABEL: func.func @conv2d_grad_input
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<2x4x13x13xf32>
// CHECK: %[[S:.*]] = tensor.insert_slice %arg0 into %[[Z]][0, 0, 3, 3] [2, 4, 4, 4] [1, 1, 2, 2] : tensor<2x4x4x4xf32> into tensor<2x4x13x13xf32>
// CHECK: %[[F:.*]] = linalg.generic {indexing_maps = [#[[FLIP]], {{.*}}]} ins(%{{.*}} : tensor<4x3x3x3xf32>) outs(%{{.*}} : tensor<3x4x3x3xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[SPREAD]], {{.*}}]{{.*}} ins(%[[S]], %[[F]] : tensor<2x4x13x13xf32>, tensor<3x4x3x3xf32>) outs(%{{.*}} : tensor<2x3x9x9xf32>)
// CHECK-NOT: hetrt_
// CHECK: return
func.func @conv2d_grad_input(%dy: tensor<2x4x4x4xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<2x3x9x9xf32> {
  %dx = het.conv2d_grad_input %dy, %k {strides = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 2, 2>}
      : tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x9x9xf32>
  return %dx : tensor<2x3x9x9xf32>
}

// -----

// What is not generated calls het's reference kernels, never oneDNN:
// grouped convolutions, a grad_input whose padding exceeds the filter's
// reach.
// CHECK-LABEL: func.func @fallbacks
// CHECK: call @hetrt_ref_conv2d(
// CHECK: call @hetrt_ref_conv2d_grad_input(
// CHECK-NOT: hetrt_dnnl
func.func @fallbacks(%x: tensor<2x4x8x8xf32>, %k: tensor<4x2x3x3xf32>, %dy: tensor<2x4x8x8xf32>,
                     %k1: tensor<4x4x1x1xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x6x6xf32>) {
  %y = het.conv2d %x, %k {padding = array<i64: 1, 1>, groups = 2 : i64}
      : tensor<2x4x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<2x4x8x8xf32>
  %dx = het.conv2d_grad_input %dy, %k1 {padding = array<i64: 1, 1>}
      : tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32> -> tensor<2x4x6x6xf32>
  return %y, %dx : tensor<2x4x8x8xf32>, tensor<2x4x6x6xf32>
}

// -----

// Batch norm is generated as per-channel sums (a reduction over every axis
// but the channel), twice (mean, then the squared deviations), and
// element-wise ops; max pooling as a reduction over a 3x3 window of the
// input padded with -inf, read at (2i + a, 2j + b), the first maximum kept
// (a strict comparison). No library call is left.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CHANNEL:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-LABEL: func.func @generated_norm_and_pooling
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[CHANNEL]]], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[CHANNEL]]], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// CHECK: math.rsqrt
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PADDED:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 0, 0]
// CHECK: tensor.yield %[[NEGINF]]
// CHECK: linalg.generic {indexing_maps = [#[[WINDOW]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[PADDED]], %{{.*}} : tensor<2x4x9x9xf32>, tensor<3x3xf32>)
// CHECK: arith.cmpf ogt
// CHECK-NOT: hetrt_
func.func @generated_norm_and_pooling(%x: tensor<2x4x8x8xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) {
  %n, %m, %r = het.batch_norm %x, %g, %b : tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>
      -> tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>
  %p = het.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>}
      : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return %n, %p : tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>
}

// -----

// Pooling gradients whose windows tile the input exactly (2x2 with stride
// 2 on an even plane; a global average pool) scatter into the windows: one
// all-parallel generic over [n, c, oh, kh, ow, kw], reading the argmax and
// dy (or the scaled dy) at (n, c, i, j), collapsed to [n, c, h, w]. No zero
// fill, no reduction, no gathers (tensor.extract). The overlapping 3x3
// windows with padding keep the gather form.
// CHECK-DAG: #[[AT_OUTPUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-LABEL: func.func @tiling_windows
// CHECK: %[[ARGMAX:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-NOT: linalg.fill
// CHECK: %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[AT_OUTPUT]], #[[AT_OUTPUT]], #[[ALL]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[ARGMAX]]#1, %arg0 : tensor<2x4x4x4xi64>, tensor<2x4x4x4xf32>) outs(%{{.*}} : tensor<2x4x4x2x4x2xf32>)
// CHECK-NOT: tensor.extract
// CHECK: arith.cmpi eq
// CHECK: tensor.collapse_shape %[[MAX]] {{\[}}[0], [1], [2, 3], [4, 5]] : tensor<2x4x4x2x4x2xf32> into tensor<2x4x8x8xf32>
// CHECK: %[[AVG:.*]] = linalg.generic {indexing_maps = [#[[AT_OUTPUT]], #[[ALL]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<2x4x1x1xf32>) outs(%{{.*}} : tensor<2x4x1x8x1x8xf32>)
// CHECK: tensor.collapse_shape %[[AVG]] {{\[}}[0], [1], [2, 3], [4, 5]] : tensor<2x4x1x8x1x8xf32> into tensor<2x4x8x8xf32>
// CHECK: linalg.fill
// CHECK: tensor.extract
func.func @tiling_windows(%dy: tensor<2x4x4x4xf32>, %x: tensor<2x4x8x8xf32>, %dg: tensor<2x4x1x1xf32>,
                          %dp: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %0 = het.max_pool2d_grad %dy, %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>}
      : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %1 = het.avg_pool2d_grad %dg {kernel = array<i64: 8, 8>, strides = array<i64: 8, 8>}
      : tensor<2x4x1x1xf32> -> tensor<2x4x8x8xf32>
  %2 = het.max_pool2d_grad %dp, %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>}
      : tensor<2x4x4x4xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  return %0, %1, %2 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}
