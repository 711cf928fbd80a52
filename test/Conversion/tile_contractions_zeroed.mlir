// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows'" -split-input-file | FileCheck %s
// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows rblock=2'" -split-input-file | FileCheck %s --check-prefix=BLOCKED

// A contraction whose output a fill of +0.0 initializes just before (as
// HetToLinalg builds every one): the accumulators start from zero vectors,
// nothing loads the output and the fill is gone. With cache blocks of the
// reduction, the first block is peeled to start from zero and the others
// load what the previous blocks stored.
// CHECK-LABEL: func.func @zeroed
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO0:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-NEXT: %[[ZERO1:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-NOT: vector.load %arg2
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO0]], %{{.*}} = %[[ZERO1]])
// CHECK-NOT: vector.load %arg2
// CHECK: return
// BLOCKED-LABEL: func.func @zeroed
// BLOCKED-NOT: linalg.fill
// BLOCKED: arith.constant dense<0.000000e+00> : vector<16xf32>
// BLOCKED: scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args
// BLOCKED: scf.for %[[BLOCK:[a-z0-9_]+]] = %c2{{.*}} to %c5{{.*}} step %c2
// BLOCKED-NOT: dense<0.000000e+00>
// BLOCKED: vector.load %arg2
// BLOCKED-NEXT: vector.load %arg2
// BLOCKED-NOT: dense<0.000000e+00>
// BLOCKED: scf.for %{{.*}} = %[[BLOCK]] to
// BLOCKED: return
// BLOCKED-LABEL: func.func @not_zeroed
func.func @zeroed(%a: memref<4x5xf32>, %b: memref<5x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%a, %b : memref<4x5xf32>, memref<5x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A fill of -0.0 (0.0 + p and -0.0 + p differ when p is -0.0) or of
// another buffer stays, and the accumulators are loaded.
// CHECK-LABEL: func.func @not_zeroed
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg2
// CHECK: vector.load %arg2
// CHECK-LABEL: func.func @other_buffer
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg3
// CHECK: vector.load %arg2
func.func @not_zeroed(%a: memref<4x5xf32>, %b: memref<5x16xf32>, %c: memref<4x16xf32>) {
  %zero = arith.constant -0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%a, %b : memref<4x5xf32>, memref<5x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @other_buffer(%a: memref<4x5xf32>, %b: memref<5x16xf32>, %c: memref<4x16xf32>, %d: memref<4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%d : memref<4x16xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%a, %b : memref<4x5xf32>, memref<5x16xf32>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
