// RUN: het-opt %s --het-parallel-loops-to-runtime | FileCheck %s

// A large parallel loop nest moves into a loop function over [begin, end)
// of its first dimension; what it uses from outside goes through a table
// (buffers by address, scalars as 64-bit words), the view it reads is
// recomputed inside, and the runtime runs the task on its threads.
// CHECK-LABEL: func.func private @scale_loop0(
// CHECK-SAME: %[[BEGIN:[a-z0-9]+]]: index, %[[END:[a-z0-9]+]]: index, %{{[a-z0-9]+}}: memref<256x256xf32>, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: memref<256x512xf32>) {
// CHECK: memref.subview
// CHECK: %[[LO:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[HI:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NOT: scf.parallel
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[LO]], %{{.*}}) to (%[[HI]], %{{.*}})
// CHECK: arith.mulf
// CHECK: func.func private @scale_loop0_task(i64, i64, i64) attributes {hetrt.parallel_task = @scale_loop0}
// CHECK-LABEL: func.func @scale(
// CHECK: %[[TABLE:.*]] = memref.alloca() : memref<3xi64>
// CHECK: memref.store {{.*}}, %[[TABLE]]
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK-COUNT-2: memref.store {{.*}}, %[[TABLE]]
// CHECK: %[[TASK:.*]] = constant @scale_loop0_task : (i64, i64, i64) -> ()
// CHECK: call @hetrt_parallel_for(%{{.*}}, %[[TASK]], %{{.*}}) : (i64, (i64, i64, i64) -> (), i64) -> ()
// CHECK-NOT: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%c256
// Small nests and nests that call something stay as they are.
// CHECK: scf.parallel {{.*}} to (%c8, %c8)
// CHECK: scf.parallel
// CHECK: call @opaque
// CHECK: func.func private @hetrt_parallel_for(i64, (i64, i64, i64) -> (), i64)
func.func private @opaque(f32)
func.func @scale(%x: memref<256x512xf32>, %y: memref<256x256xf32>, %s: f32, %small: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  %half = memref.subview %x[0, 0] [256, 256] [1, 1] : memref<256x512xf32> to memref<256x256xf32, strided<[512, 1]>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c256) step (%c1, %c1) {
    %v = memref.load %half[%i, %j] : memref<256x256xf32, strided<[512, 1]>>
    %w = arith.mulf %v, %s : f32
    memref.store %w, %y[%i, %j] : memref<256x256xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
    memref.store %s, %small[%i, %j] : memref<8x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c256, %c256) step (%c1, %c1) {
    %v = memref.load %y[%i, %j] : memref<256x256xf32>
    func.call @opaque(%v) : (f32) -> ()
    scf.reduce
  }
  return
}
