// RUN: het-opt %s --het-tile-transposes -split-input-file | FileCheck %s

// het-tile-transposes: a transpose of the last two dimensions, larger than
// one block, runs in blocks over parallel loops; leading dimensions are
// looped one at a time. 1000 is no multiple of 16: 32 x 32 blocks of
// loops (tails clipped).
// CHECK-LABEL: func.func @weight
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%c784, %c1000) step (%c32{{.*}}, %c32{{.*}})
// CHECK:   affine.min
// CHECK:   %[[IN:.*]] = memref.subview %arg0
// CHECK:   %[[OUT:.*]] = memref.subview %arg1
// CHECK:   linalg.transpose ins(%[[IN]] : {{.*}}) outs(%[[OUT]] : {{.*}}) permutation = [1, 0]
func.func @weight(%w: memref<1000x784xf32>, %t: memref<784x1000xf32>) {
  linalg.transpose ins(%w : memref<1000x784xf32>) outs(%t : memref<784x1000xf32>) permutation = [1, 0]
  return
}

// -----

// Both transposed dimensions multiples of 16 (f32, contiguous): blocks of
// 16 x 16 transposed in vector registers -- 16 row loads, shuffles (no
// element-by-element extracts), 16 row stores.
// CHECK-LABEL: func.func @heads
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%c4, %c64, %c64) step (%c1, %c16, %c16)
// CHECK-COUNT-16: vector.load %arg0{{.*}} : memref<4x64x64xf32>, vector<16xf32>
// CHECK-NOT: vector.extract %
// CHECK: vector.shuffle
// CHECK-COUNT-16: vector.store {{.*}}, %arg1{{.*}} : memref<4x64x64xf32>, vector<16xf32>
// CHECK-NOT: linalg.transpose
func.func @heads(%x: memref<4x64x64xf32>, %y: memref<4x64x64xf32>) {
  linalg.transpose ins(%x : memref<4x64x64xf32>) outs(%y : memref<4x64x64xf32>) permutation = [0, 2, 1]
  return
}

// -----

// Other permutations, and one block or less, are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: scf.parallel
// CHECK: linalg.transpose {{.*}} permutation = [1, 0, 2]
// CHECK: linalg.transpose {{.*}} permutation = [1, 0]
func.func @untouched(%x: memref<4x64x64xf32>, %y: memref<64x4x64xf32>, %s: memref<16x32xf32>, %t: memref<32x16xf32>) {
  linalg.transpose ins(%x : memref<4x64x64xf32>) outs(%y : memref<64x4x64xf32>) permutation = [1, 0, 2]
  linalg.transpose ins(%s : memref<16x32xf32>) outs(%t : memref<32x16xf32>) permutation = [1, 0]
  return
}
