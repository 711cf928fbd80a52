// RUN: het-opt %s --split-input-file --het-free-at-last-use | FileCheck %s

// Each buffer is freed right after the last use of it, of its views, or of
// its address handed to the runtime -- not at the end of the function.
func.func private @kernel(memref<4x8xf32>, memref<4x8xf32>)
func.func private @hetrt_op(!llvm.ptr)

// CHECK: module attributes {hetrt.deallocation = "last-use"}
// CHECK-LABEL: func.func @step(
// CHECK: %[[A:.*]] = memref.alloc
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: call @kernel(%arg0, %[[A]])
// CHECK-NEXT: call @kernel(%[[A]], %[[B]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: %[[FLAT:.*]] = memref.collapse_shape %[[B]]
// An unused buffer is freed where it was made.
// CHECK-NEXT: %[[C:.*]] = memref.alloc
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[B]]
// A view keeps its buffer alive, and so does its address stored in a
// call's argument table: %[[B]] lives until the copy of its view.
// CHECK: call @hetrt_op
// CHECK-NEXT: memref.copy %[[FLAT]], %arg1
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @step(%in: memref<4x8xf32>, %out: memref<32xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  call @kernel(%in, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  call @kernel(%a, %b) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %flat = memref.collapse_shape %b [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  %c = memref.alloc() : memref<4x8xf32>
  %address = memref.extract_aligned_pointer_as_index %b : memref<4x8xf32> -> index
  %word = arith.index_cast %address : index to i64
  %table = memref.alloca() : memref<1xi64>
  %zero = arith.constant 0 : index
  memref.store %word, %table[%zero] : memref<1xi64>
  %tableAddress = memref.extract_aligned_pointer_as_index %table : memref<1xi64> -> index
  %tableWord = arith.index_cast %tableAddress : index to i64
  %pointer = llvm.inttoptr %tableWord : i64 to !llvm.ptr
  call @hetrt_op(%pointer) : (!llvm.ptr) -> ()
  memref.copy %flat, %out : memref<32xf32> to memref<32xf32>
  return
}

// -----

// A buffer flowing through an scf.if result is beyond this analysis: the
// module gets MLIR's ownership-based deallocation.
// CHECK: module attributes {hetrt.deallocation = "ownership"}
// CHECK-LABEL: func.func @choose(
// CHECK-NOT: bufferization.dealloc
// CHECK: memref.dealloc
func.func @choose(%flag: i1, %out: memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %c = scf.if %flag -> memref<8xf32> {
    scf.yield %a : memref<8xf32>
  } else {
    scf.yield %b : memref<8xf32>
  }
  memref.copy %c, %out : memref<8xf32> to memref<8xf32>
  return
}

// -----

// A call marked hetrt.retains_buffers (a pipeline's receive, which keeps the
// buffer's address until the phase's last receive call fills it): its buffer
// lives to the end of the block even when nothing reads it.
func.func private @hetrt_recv(!llvm.ptr, !llvm.ptr)
func.func private @layer(memref<8xf32>)
// CHECK: module attributes {hetrt.deallocation = "last-use"}
// CHECK-LABEL: func.func @stage(
// CHECK: %[[RECEIVED:.*]] = memref.alloc
// CHECK: %[[OTHER:.*]] = memref.alloc
// CHECK: call @hetrt_recv
// CHECK-NEXT: call @layer(%[[OTHER]])
// CHECK-NEXT: memref.dealloc %[[OTHER]]
// CHECK-NEXT: memref.dealloc %[[RECEIVED]]
// CHECK-NEXT: return
func.func @stage(%meta: !llvm.ptr) {
  %received = memref.alloc() : memref<8xf32>
  %other = memref.alloc() : memref<8xf32>
  %address = memref.extract_aligned_pointer_as_index %received : memref<8xf32> -> index
  %word = arith.index_cast %address : index to i64
  %table = memref.alloca() : memref<1xi64>
  %zero = arith.constant 0 : index
  memref.store %word, %table[%zero] : memref<1xi64>
  %tableAddress = memref.extract_aligned_pointer_as_index %table : memref<1xi64> -> index
  %tableWord = arith.index_cast %tableAddress : index to i64
  %pointer = llvm.inttoptr %tableWord : i64 to !llvm.ptr
  call @hetrt_recv(%meta, %pointer) {hetrt.retains_buffers} : (!llvm.ptr, !llvm.ptr) -> ()
  call @layer(%other) : (memref<8xf32>) -> ()
  return
}
