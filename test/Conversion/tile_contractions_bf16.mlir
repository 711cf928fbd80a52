// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows' bf16-dot=true" -split-input-file | FileCheck %s --check-prefix=DOT
// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows rblock=2' bf16-dot=true" -split-input-file | FileCheck %s --check-prefix=BLOCKED
// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows'" -split-input-file | FileCheck %s --check-prefix=EXTEND
// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=1 width=8 vectors=1 order=rows' bf16-dot=true" -split-input-file | FileCheck %s --check-prefix=YMM

// A generated contraction over bf16 inputs (native bf16 products with
// --library=mlir: WidenLowPrecision keeps the operands, the body extends
// them to the f32 accumulator). With bf16-dot the reduction runs in pairs
// (k, k+1) on vdpbf16ps: b's vectors at k and k+1 interleaved lane by lane,
// a's two scalars as one broadcast 32-bit pair; the odd last k (5 = 2 x 2
// + 1) is an extended multiply-add. Without bf16-dot every input is
// extended as it is loaded.
// DOT-LABEL: func.func @matmul
// DOT: scf.for %[[K:[a-z0-9_]+]] = %c0{{.*}} to %c4{{.*}} step %c2{{.*}} iter_args
// DOT: %[[K1:.*]] = arith.addi %[[K]], %c1
// DOT-DAG: memref.load %arg0[%{{.*}}, %[[K]]] : memref<4x5xbf16>
// DOT-DAG: memref.load %arg0[%{{.*}}, %[[K1]]] : memref<4x5xbf16>
// DOT: vector.broadcast %{{.*}} : i32 to vector<16xi32>
// DOT: %[[B0:.*]] = vector.load %arg1[%[[K]], %c0{{.*}}] : memref<5x16xbf16>, vector<16xbf16>
// DOT: %[[B0I:.*]] = vector.bitcast %[[B0]] : vector<16xbf16> to vector<16xi16>
// DOT: %[[B1:.*]] = vector.load %arg1[%[[K1]], %c0{{.*}}] : memref<5x16xbf16>, vector<16xbf16>
// DOT: %[[B1I:.*]] = vector.bitcast %[[B1]] : vector<16xbf16> to vector<16xi16>
// DOT: vector.shuffle %[[B0I]], %[[B1I]] [0, 16, 1, 17, 2, 18
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT: scf.yield
// DOT: vector.load %arg1[%c4{{.*}}, %c0{{.*}}] : memref<5x16xbf16>, vector<16xbf16>
// DOT: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// DOT: arith.mulf
// DOT: arith.addf
// DOT-NOT: linalg.generic
// DOT: return
// With cache blocks of 2 (5 = 2 + 2 + 1) the bounds are dynamic: the odd
// last point is decided at run time.
// BLOCKED-LABEL: func.func @matmul
// BLOCKED: scf.for %[[BLOCK:[a-z0-9_]+]] = %c0{{.*}} to %c5{{.*}} step %c2
// BLOCKED: arith.divui
// BLOCKED: scf.for %{{.*}} = %[[BLOCK]] to %{{.*}} step %c2
// BLOCKED: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// BLOCKED: scf.if
// BLOCKED: arith.extf
// BLOCKED: return
// EXTEND-LABEL: func.func @matmul
// EXTEND-NOT: llvm.call_intrinsic
// EXTEND: scf.for %{{.*}} = %c0{{.*}} to %c5{{.*}} step %c1{{.*}} iter_args
// EXTEND: vector.load %arg1{{.*}} : memref<5x16xbf16>, vector<16xbf16>
// EXTEND: arith.extf %{{.*}} : vector<16xbf16> to vector<16xf32>
// EXTEND: memref.load %arg0{{.*}} : memref<4x5xbf16>
// EXTEND: arith.extf %{{.*}} : bf16 to f32
// EXTEND: return
// 8-lane vectors use the 256-bit instruction.
// YMM-LABEL: func.func @matmul
// YMM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.256"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<8xf32>, vector<16xbf16>, vector<16xbf16>) -> vector<8xf32>
func.func @matmul(%a: memref<4x5xbf16>, %b: memref<5x16xbf16>, %c: memref<4x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%a, %b : memref<4x5xbf16>, memref<5x16xbf16>) outs(%c : memref<4x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A vector narrower than the dot product's (20 columns: 16 + 4) takes two
// extended multiply-adds per pair; the 16-lane vector the dot product.
// DOT-LABEL: func.func @tail_columns
// DOT: scf.for {{.*}} step %c2
// DOT-DAG: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT-DAG: arith.extf %{{.*}} : vector<4xbf16> to vector<4xf32>
// DOT: scf.yield
func.func @tail_columns(%a: memref<2x6xbf16>, %b: memref<6x20xbf16>, %c: memref<2x20xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%a, %b : memref<2x6xbf16>, memref<6x20xbf16>) outs(%c : memref<2x20xf32>) {
  ^bb0(%x: bf16, %y: bf16, %o: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// One input bf16 and the other f32 is no contraction the tiler takes: the
// loops stay linalg's.
// DOT-LABEL: func.func @mixed_formats
// DOT: linalg.generic
func.func @mixed_formats(%a: memref<2x6xbf16>, %b: memref<6x16xf32>, %c: memref<2x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (k, j)>, affine_map<(i, k, j) -> (i, j)>],
                  iterator_types = ["parallel", "reduction", "parallel"]}
    ins(%a, %b : memref<2x6xbf16>, memref<6x16xf32>) outs(%c : memref<2x16xf32>) {
  ^bb0(%x: bf16, %y: f32, %o: f32):
    %xe = arith.extf %x : bf16 to f32
    %p = arith.mulf %xe, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
