// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=4 width=8 vectors=2 order=rows'" -split-input-file -verify-diagnostics | FileCheck %s

// het-tile-contractions: a generated contraction on buffers becomes blocks
// of rows x vectors accumulators, loaded once, carried through the
// reduction loop and stored once; the input that varies along the vector
// dimension is a vector load, the other a scalar broadcast. The products
// stay a separate multiply and add, in the reduction's order.
// 6 x 20 with 4 rows of 2 x 8 lanes: a block of 4 rows, then a tail of 2;
// 16 columns, then a tail of one 4-lane vector.
#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.generic
// CHECK: %[[ACC:.*]] = vector.load %arg2[%{{.*}}, %{{.*}}] : memref<6x20xf32>, vector<8xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CARRIED:.*]] = %[[ACC]], {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:   %[[A:.*]] = memref.load %arg0
// CHECK:   %[[SPLAT:.*]] = vector.broadcast %[[A]] : f32 to vector<8xf32>
// CHECK:   %[[B:.*]] = vector.load %arg1[{{.*}}] : memref<5x20xf32>, vector<8xf32>
// CHECK:   %[[P:.*]] = arith.mulf %[[SPLAT]], %[[B]] : vector<8xf32>
// CHECK:   arith.addf %[[CARRIED]], %[[P]] : vector<8xf32>
// CHECK: vector.store %{{.*}}, %arg2[{{.*}}] : memref<6x20xf32>, vector<8xf32>
// The column tail: one 4-lane vector per row.
// CHECK: vector.load %arg2[{{.*}}] : memref<6x20xf32>, vector<4xf32>
// CHECK: iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// The row tail: 2 rows.
// CHECK: iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>)
// CHECK-NOT: vector.fma
// CHECK: return
func.func @matmul(%A: memref<6x5xf32>, %B: memref<5x20xf32>, %C: memref<6x20xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A convolution: the input's innermost index is ow + kw, a contiguous read
// from a shifted start; the filter does not depend on ow (a broadcast); the
// batch and output channel loops run in an scf.parallel, the three
// reduction loops carry the accumulators.
#x = affine_map<(n, f, oh, c, kh, kw, ow) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(n, f, oh, c, kh, kw, ow) -> (f, c, kh, kw)>
#y = affine_map<(n, f, oh, c, kh, kw, ow) -> (n, f, oh, ow)>
// CHECK-LABEL: func.func @conv
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.for {{.*}} iter_args
// CHECK: scf.for {{.*}} iter_args
// CHECK: affine.apply
// CHECK: vector.load %arg0[{{.*}}] : memref<2x3x10x10xf32>, vector<8xf32>
// CHECK: memref.load %arg1
// CHECK: vector.broadcast
func.func @conv(%X: memref<2x3x10x10xf32>, %W: memref<4x3x3x3xf32>, %Y: memref<2x4x8x8xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "parallel"]}
    ins(%X, %W : memref<2x3x10x10xf32>, memref<4x3x3x3xf32>) outs(%Y : memref<2x4x8x8xf32>) {
  ^bb0(%x: f32, %w: f32, %o: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
// Not contractions, or not ones the tiler takes: left alone.
// CHECK-LABEL: func.func @untouched
// CHECK-COUNT-4: linalg.generic
func.func @untouched(%A: memref<6x5xf32>, %B: memref<5x20xf32>, %C: memref<6x20xf32>, %D: memref<6x20xf32, strided<[40, 2]>>) {
  // A multiply-subtract.
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.subf %o, %p : f32
    linalg.yield %s : f32
  }
  // Fast-math flags would let LLVM reassociate: not the evaluator's sum.
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y fastmath<fast> : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  // An input that is a view of the output.
  %view = memref.subview %C[0, 0] [5, 20] [1, 1] : memref<6x20xf32> to memref<5x20xf32, strided<[20, 1]>>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %view : memref<6x5xf32>, memref<5x20xf32, strided<[20, 1]>>) outs(%C : memref<6x20xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  // An output read with a stride along its innermost dimension.
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%D : memref<6x20xf32, strided<[40, 2]>>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
// An attribute names the tiling of one contraction; one that does not fit
// is an error naming it.
func.func @bad_attribute(%A: memref<6x5xf32>, %B: memref<5x20xf32>, %C: memref<6x20xf32>) {
  // expected-error @+1 {{tiling 'row=d1 rows=2 width=8 vectors=1 order=rows' does not fit this contraction: row dimension d1 is not a parallel output dimension other than the vector one (d2)}}
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>)
    attrs = {het.contraction_tiling = "row=d1 rows=2 width=8 vectors=1 order=rows"} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @unreadable_attribute(%A: memref<6x5xf32>, %B: memref<5x20xf32>, %C: memref<6x20xf32>) {
  // expected-error @+1 {{het.contraction_tiling 'rows=lots' is not 'row=d<N> rows=<N> width=<N> vectors=<N> order=rows|columns [row2=d<N> rows2=<N>] [others=inside] [rblock=<N>]'}}
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>)
    attrs = {het.contraction_tiling = "rows=lots"} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
// A cache block of 2 along the reduction of 5: an outer loop over block
// starts (step 2), the tiles inside it, and each tile's reduction loop from
// the block's start to min(start + 2, 5); the accumulators go through the
// output between blocks.
// CHECK-LABEL: func.func @reduction_blocks
// CHECK: %[[C5:.*]] = arith.constant 5 : index
// CHECK: scf.for %[[START:.*]] = %{{.*}} to %[[C5]] step %[[C2:.*]] {
// CHECK:   %[[NEXT:.*]] = arith.addi %[[START]], %{{.*}}
// CHECK:   %[[END:.*]] = arith.minsi %[[NEXT]], %{{.*}}
// CHECK:   vector.load %arg2
// CHECK:   scf.for %{{.*}} = %[[START]] to %[[END]] step %{{.*}} iter_args
// CHECK:   vector.store %{{.*}}, %arg2
func.func @reduction_blocks(%A: memref<6x5xf32>, %B: memref<5x20xf32>, %C: memref<6x20xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>)
    attrs = {het.contraction_tiling = "row=d0 rows=2 width=8 vectors=1 order=rows rblock=2"} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d1)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @zero_reduction_block(%A: memref<6x5xf32>, %B: memref<5x20xf32>, %C: memref<6x20xf32>) {
  // expected-error @+1 {{het.contraction_tiling 'row=d0 rows=2 width=8 vectors=1 order=rows rblock=0' is not}}
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%A, %B : memref<6x5xf32>, memref<5x20xf32>) outs(%C : memref<6x20xf32>)
    attrs = {het.contraction_tiling = "row=d0 rows=2 width=8 vectors=1 order=rows rblock=0"} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
