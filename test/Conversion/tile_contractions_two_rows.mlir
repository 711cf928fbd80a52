// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows row2=d1 rows2=3'" | FileCheck %s

// Two row dimensions (row2): a filter gradient's shape, out[f, c, w] += dy[n,
// f, w] * x[n, c, w], where dy varies with f only and x with c only. A block
// of 2 f-rows x 3 c-rows carries 6 accumulators and, per reduction point,
// loads 2 vectors of dy and 3 of x (one row dimension would need a load per
// product). c = 4 leaves a tail block of one c-row: 2 accumulators, 2 + 1
// loads. The products keep their order: a separate multiply and add each.
#dy = affine_map<(f, c, n, w) -> (n, f, w)>
#x = affine_map<(f, c, n, w) -> (n, c, w)>
#out = affine_map<(f, c, n, w) -> (f, c, w)>
// CHECK-LABEL: func.func @filter_gradient
// CHECK-NOT: linalg.generic
// The main c block (3 rows, starting at 0: no loop), f blocks of 2 (the
// threads split them).
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}) step (%c2{{.*}})
// CHECK-COUNT-6: vector.load %arg2[{{.*}}] : memref<4x4x16xf32>, vector<16xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NEXT: vector.load %arg0[{{.*}}] : memref<5x4x16xf32>, vector<16xf32>
// CHECK-NEXT: vector.load %arg1[{{.*}}] : memref<5x4x16xf32>, vector<16xf32>
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: vector.load %arg1
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: vector.load %arg1
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: vector.load %arg0
// CHECK-COUNT-3: arith.mulf
// CHECK-NOT: vector.load
// CHECK: scf.yield
// CHECK-COUNT-6: vector.store {{.*}}, %arg2[{{.*}}] : memref<4x4x16xf32>, vector<16xf32>
// The tail of one c-row (c = 3): 2 accumulators, 2 loads of dy and 1 of x.
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}) step (%c2{{.*}})
// CHECK-COUNT-2: vector.load %arg2[%{{.*}}, %c3, %{{.*}}]
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
// CHECK-NEXT: vector.load %arg0
// CHECK-NEXT: vector.load %arg1[%{{.*}}, %c3, %{{.*}}]
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: vector.load %arg0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: scf.yield
// CHECK-COUNT-2: vector.store
// CHECK-NOT: vector.fma
// CHECK: return
func.func @filter_gradient(%dy: memref<5x4x16xf32>, %x: memref<5x4x16xf32>, %out: memref<4x4x16xf32>) {
  linalg.generic {indexing_maps = [#dy, #x, #out], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
    ins(%dy, %x : memref<5x4x16xf32>, memref<5x4x16xf32>) outs(%out : memref<4x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A tap dimension k (out[f, c, k, w] += dy[n, f, w] * x[n, c, w + k]): by
// default the other parallel dimensions are an scf.parallel around all
// blocks; with others=inside a loop over k runs inside each block pair, so
// consecutive register blocks read the same dy and x rows (shifted by k)
// from the L1 cache. The blocks' own loops then come first.
// RUN: het-opt %s --het-tile-contractions="tiling='row=d0 rows=2 width=16 vectors=1 order=rows row2=d1 rows2=3 others=inside'" | FileCheck %s --check-prefix=INSIDE
// CHECK-LABEL: func.func @taps
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c3{{.*}}) step (%c1{{.*}})
// CHECK: scf.for {{.*}} step %c2
// CHECK: vector.load %arg2
// INSIDE-LABEL: func.func @taps
// INSIDE: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%c2{{.*}})
// INSIDE-NEXT: arith.constant
// INSIDE: scf.for %[[K:.*]] = %{{.*}} to %c3{{.*}} step %c1
// INSIDE: vector.load %arg2[%{{.*}}, %{{.*}}, %[[K]], %{{.*}}]
// INSIDE: scf.for {{.*}} iter_args
// INSIDE: vector.load %arg1[%{{.*}}, %{{.*}}, %{{.*}}]
#tdy = affine_map<(f, c, k, n, w) -> (n, f, w)>
#tx = affine_map<(f, c, k, n, w) -> (n, c, w + k)>
#tout = affine_map<(f, c, k, n, w) -> (f, c, k, w)>
func.func @taps(%dy: memref<5x4x16xf32>, %x: memref<5x3x18xf32>, %out: memref<4x3x3x16xf32>) {
  linalg.generic {indexing_maps = [#tdy, #tx, #tout], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]}
    ins(%dy, %x : memref<5x4x16xf32>, memref<5x3x18xf32>) outs(%out : memref<4x3x3x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}
