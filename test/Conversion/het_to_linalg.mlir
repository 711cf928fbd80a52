// RUN: het-opt %s --convert-het-to-linalg -split-input-file | FileCheck %s
// RUN: het-opt %s --convert-het-to-linalg="library=reference" -split-input-file | FileCheck %s --check-prefix=REF

// Element-wise ops become linalg.generic; a [4] operand broadcasts along
// the leading dimension of [8, 4] (NumPy rules).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK-NOT: het.
func.func @elementwise(%a: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %0 = het.add %a, %b : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %1 = het.relu %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

// Library ops become one call; the library is the callee's name, and the
// shapes are a constant meta array (2 operands, 1 result, [8,4] [3,4] [8,3],
// activation none).
// The declaration and the meta array follow the code (symbol lookups walk
// the module from its start; the functions calls look up come first).
// CHECK-LABEL: func.func @library
// CHECK: memref.get_global @[[META:__hetrt_meta_[0-9]+]]
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x3xf32>
// CHECK: call @hetrt_dnnl_linear(
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-DAG: func.func private @hetrt_dnnl_linear(!llvm.ptr, !llvm.ptr)
// CHECK-DAG: memref.global "private" constant @[[META]] : memref<13xi64> = dense<[2, 1, 2, 8, 4, 2, 3, 4, 2, 8, 3, 0, 0]>
// REF: func.func private @hetrt_ref_linear(!llvm.ptr, !llvm.ptr)
// REF-NOT: hetrt_dnnl
func.func @library(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>) -> tensor<8x3xf32> {
  %y = het.linear %x, %w : tensor<8x4xf32>, tensor<3x4xf32> -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// Softmax is generated code: the peak and the sum are reductions along the
// axis; with `causal` key k of query q is visible when k <= q + (K - Q).
// CHECK-LABEL: func.func @softmax
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[K:.*]] = linalg.index 2 : index
// CHECK: %[[Q:.*]] = linalg.index 1 : index
// CHECK: arith.cmpi sle, %[[K]],
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.divf
// CHECK-NOT: hetrt_ref_softmax
// REF-LABEL: func.func @softmax
// REF-NOT: call
func.func @softmax(%x: tensor<4x16x16xf32>) -> tensor<4x16x16xf32> {
  %y = het.softmax %x {causal, scale = 2.5e-01 : f64} : tensor<4x16x16xf32>
  return %y : tensor<4x16x16xf32>
}

// -----

// Ops without a linalg lowering or a oneDNN primitive call het's kernels
// with either library (they range-check indices).
// CHECK-LABEL: func.func @embedding
// CHECK: call @hetrt_ref_embedding(
// CHECK: func.func private @hetrt_ref_embedding
// REF-LABEL: func.func @embedding
// REF: call @hetrt_ref_embedding(
func.func @embedding(%t: tensor<64x32xf32>, %i: tensor<4x16xi64>) -> tensor<4x16x32xf32> {
  %y = het.embedding %t, %i : tensor<64x32xf32>, tensor<4x16xi64> -> tensor<4x16x32xf32>
  return %y : tensor<4x16x32xf32>
}

// -----

// Layer norm over the last dimension: row sums, then the biased variance
// around the mean, then the normalized, scaled output.
// CHECK-LABEL: func.func @layer_norm
// CHECK-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: math.sqrt
// CHECK: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-NOT: call
func.func @layer_norm(%x: tensor<4x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x16x32xf32> {
  %y, %m, %r = het.layer_norm %x, %g, %b : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  return %y : tensor<4x16x32xf32>
}

// -----

// RMS norm over the last dimension: the row sum of squares, rstd from it,
// then the scaled output; no centring, no runtime call.
// CHECK-LABEL: func.func @rms_norm
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: math.sqrt
// CHECK: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-NOT: arith.subf
// CHECK-NOT: call
// REF-LABEL: func.func @rms_norm
// REF-NOT: call
// REF: return
func.func @rms_norm(%x: tensor<4x16x32xf32>, %g: tensor<32xf32>) -> tensor<4x16x32xf32> {
  %y, %r = het.rms_norm %x, %g : tensor<4x16x32xf32>, tensor<32xf32> -> tensor<4x16x32xf32>, tensor<4x16xf32>
  return %y : tensor<4x16x32xf32>
}

// -----

// Its gradient: a row reduction (g * xhat), a column reduction over both
// leading dimensions (dgamma), then dx element-wise.
// CHECK-LABEL: func.func @rms_norm_grad
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: iterator_types = ["reduction", "reduction", "parallel"]
// CHECK: iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.subf
// CHECK-NOT: call
func.func @rms_norm_grad(%dy: tensor<4x16x32xf32>, %x: tensor<4x16x32xf32>, %g: tensor<32xf32>, %r: tensor<4x16xf32>) -> (tensor<4x16x32xf32>, tensor<32xf32>) {
  %dx, %dg = het.rms_norm_grad %dy, %x, %g, %r : tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<32xf32>, tensor<4x16xf32> -> tensor<4x16x32xf32>, tensor<32xf32>
  return %dx, %dg : tensor<4x16x32xf32>, tensor<32xf32>
}

// -----

// Cross-entropy: labels are range-checked by the runtime, then row peak,
// row sum of exponentials, the label's logit (a masked row reduction) and
// the mean over rows are generated code.
// CHECK-LABEL: func.func @loss
// CHECK: call @hetrt_check_labels(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64) -> ()
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: linalg.index 1
// CHECK: arith.cmpi eq
// CHECK: math.log
// CHECK: arith.divf
// CHECK-NOT: hetrt_ref
func.func @loss(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>) -> tensor<f32> {
  %l = het.cross_entropy %logits, %labels : tensor<8x10xf32>, tensor<8xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Layout ops: a transpose and a reshape through one flat dimension.
// CHECK-LABEL: func.func @layout
// CHECK: linalg.transpose ins(%{{.*}} : tensor<4x6xf32>) outs(%{{.*}} : tensor<6x4xf32>) permutation = [1, 0]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<6x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [3, 8] : tensor<24xf32> into tensor<3x8xf32>
func.func @layout(%x: tensor<4x6xf32>) -> tensor<3x8xf32> {
  %t = het.transpose %x {permutation = array<i64: 1, 0>} : tensor<4x6xf32> -> tensor<6x4xf32>
  %r = het.reshape %t : tensor<6x4xf32> -> tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}

// -----

// A reduction over the batch and spatial dimensions (a BN gradient's sum).
// CHECK-LABEL: func.func @reduce
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "reduction"]
func.func @reduce(%x: tensor<8x16x4x4xf32>) -> tensor<16xf32> {
  %0 = het.reduce_sum %x {axes = array<i64: 0, 2, 3>} : tensor<8x16x4x4xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// SGD reads the learning rate from the runtime (the executable's --lr),
// with the compiled one as the default.
// CHECK-LABEL: func.func @update
// CHECK: %[[LR:.*]] = call @hetrt_learning_rate(%{{.*}}) : (f64) -> f64
// CHECK: arith.truncf %[[LR]] : f64 to f32
// CHECK: linalg.generic
// CHECK: arith.subf
func.func @update(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0:2 = het.sgd %p, %g, %m {lr = 1.0e-01 : f64, momentum = 9.0e-01 : f64} : tensor<4xf32>
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// AdamW: the step's factors (bias corrections in f64, the step size, the
// decoupled decay) are computed once, by a 0-d generic, and the element
// loop reads them broadcast and holds only f32 arithmetic: f64 in the loop
// made LLVM's vectorizer pick the lanes of a double vector (4) for the
// whole f32 update. (A generic, not host scalars: on a GPU the step is in
// device memory.)
// CHECK-LABEL: func.func @adamw
// CHECK: %[[LR:.*]] = call @hetrt_learning_rate(%{{.*}}) : (f64) -> f64
// CHECK: linalg.generic {{.*}}iterator_types = []{{.*}} ins(%{{.*}} : tensor<i64>)
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK-COUNT-2: math.powf
// CHECK: math.sqrt %{{.*}} : f64
// CHECK: linalg.yield {{.*}} : f32, f32, f32
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-NOT: f64
// CHECK: math.sqrt %{{.*}} : f32
// CHECK-NOT: f64
// CHECK: linalg.yield
func.func @adamw(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %t: tensor<i64>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0:3 = het.adam %p, %g, %m, %v, %t {lr = 1.0e-03 : f64, weight_decay = 1.0e-01 : f64, decoupled} : tensor<4x8xf32>, tensor<i64>
  return %0#0, %0#1, %0#2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
