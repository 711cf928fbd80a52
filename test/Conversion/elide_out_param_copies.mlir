// RUN: het-opt %s --het-elide-out-param-copies | FileCheck %s

func.func private @layer(memref<8xf32>, memref<8xf32>)

// A result copied into its out-parameter at the end is computed there.
// CHECK-LABEL: func.func @step(
// CHECK-NOT: memref.alloc
// CHECK: call @layer(%arg0, %arg1)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @step(%in: memref<8xf32>, %out: memref<8xf32>) {
  %tmp = memref.alloc() : memref<8xf32>
  call @layer(%in, %tmp) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.copy %tmp, %out : memref<8xf32> to memref<8xf32>
  return
}

// Not when the buffer is still read after the copy, nor when the
// out-parameter has other uses.
// CHECK-LABEL: func.func @kept(
// CHECK: %[[TMP:.*]] = memref.alloc
// CHECK: memref.copy %[[TMP]], %arg1
// CHECK: call @layer(%[[TMP]], %arg2)
// CHECK: %[[TWICE:.*]] = memref.alloc
// CHECK: memref.copy %[[TWICE]], %arg3
func.func @kept(%in: memref<8xf32>, %out: memref<8xf32>, %other: memref<8xf32>,
                %read: memref<8xf32>) {
  %tmp = memref.alloc() : memref<8xf32>
  call @layer(%in, %tmp) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.copy %tmp, %out : memref<8xf32> to memref<8xf32>
  call @layer(%tmp, %other) : (memref<8xf32>, memref<8xf32>) -> ()
  %twice = memref.alloc() : memref<8xf32>
  call @layer(%read, %twice) : (memref<8xf32>, memref<8xf32>) -> ()
  call @layer(%read, %read) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.copy %twice, %read : memref<8xf32> to memref<8xf32>
  return
}
