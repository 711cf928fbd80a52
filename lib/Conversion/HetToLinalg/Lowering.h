//===- Lowering.h - shared pieces of convert-het-to-linalg ----------*- C++ -*-===//

#ifndef HET_LIB_CONVERSION_HETTOLINALG_LOWERING_H
#define HET_LIB_CONVERSION_HETTOLINALG_LOWERING_H

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::het {

/// Ops lowered to linalg/tensor/arith/math code (HetToLinalg.cpp; with
/// the layout ops of LayoutToLinalg.cpp).
bool isLoweredToLinalg(Operation *op);
FailureOr<SmallVector<Value>> lowerToLinalg(OpBuilder &b, Operation *op);

/// concat, slice, slice_grad and reduce_max (LayoutToLinalg.cpp).
bool isLayoutLoweredToLinalg(Operation *op);
FailureOr<SmallVector<Value>> lowerLayoutToLinalg(OpBuilder &b, Operation *op);

/// library=mlir: matmul, linear, linear_grad and groups == 1 convolutions
/// as generated linalg contractions (ContractionsToLinalg.cpp). False for the cases
/// left to the reference kernels (grouped convolutions, conv2d_grad_input
/// with padding beyond the filter's reach, dynamic shapes).
bool isGeneratedAsLinalg(Operation *op);
FailureOr<SmallVector<Value>> lowerLibraryOpToLinalg(OpBuilder &b, Operation *op);

/// library=mlir: embedding lookups and their gradients (not vocabulary
/// sharded) as generated linalg (EmbeddingToLinalg.cpp).
bool isEmbeddingGeneratedAsLinalg(Operation *op);
FailureOr<SmallVector<Value>> lowerEmbeddingToLinalg(OpBuilder &b, Operation *op);

/// library=mlir: max/average pooling and their gradients (static NCHW) as
/// generated linalg (PoolingToLinalg.cpp).
bool isPoolingGeneratedAsLinalg(Operation *op);
FailureOr<SmallVector<Value>> lowerPoolingToLinalg(OpBuilder &b, Operation *op);

/// library=mlir: het.dropout (static f32) drawing its Philox numbers in
/// generated code (DropoutToLinalg.cpp).
bool isDropoutGeneratedAsLinalg(Operation *op);
FailureOr<SmallVector<Value>> lowerDropoutToLinalg(OpBuilder &b, Operation *op);

/// Ops whose library kernel takes bf16 and f16 buffers: oneDNN's matrix
/// products and convolutions (bf16 only), cuDNN's convolutions without a
/// bias in one 16-bit format (HetToRuntime.cpp).
bool hasLowPrecisionKernel(Operation *op, KernelLibrary library);

/// Whether `op` is a matrix product whose generated contraction reads its
/// bf16/f16 operands and accumulates in f32 (NVIDIA GPUs with the vendor
/// libraries: cublasGemmEx on the tensor cores; generated CPU contractions
/// in bf16 when `nativeBf16`: the AVX512-BF16 dot product).
bool accumulatesLowPrecisionInF32(Operation *op, KernelLibrary library, bool nativeBf16 = true);

/// Mixed precision on kernels without a bf16/f16 path: every het op of
/// `function` with bf16 or f16 operands or results, but the casts and the
/// ops hasLowPrecisionKernel takes, computes in f32 between casts (its
/// operands cast up, its results cast back to their format), as PyTorch's
/// CPU kernels compute bf16 element-wise ops in f32 and round their
/// results (WidenLowPrecision.cpp).
/// `nativeBf16`: false widens the bf16 products too. Matrix products that
/// accumulatesLowPrecisionInF32 takes keep their operands and widen only
/// their results.
void widenLowPrecision(func::FuncOp function, KernelLibrary library, bool nativeBf16 = true);

/// Mixed precision in pipelines: collectives of bf16 or f16 values move
/// f32 (cast up before, back down after, both exact): they reduce in f32.
/// Messages between stages, forward and backward, move 16-bit values as
/// they are.
void widenLowPrecisionCommunication(Operation *root);

/// Ops lowered to a call into libhetrt (HetToRuntime.cpp); with
/// KernelLibrary::Mlir those calls go to the reference kernels.
bool isLoweredToRuntimeCall(Operation *op);
FailureOr<SmallVector<Value>> lowerToRuntimeCall(OpBuilder &b, ModuleOp module, Operation *op,
                                                 KernelLibrary library);

/// A call `void callee(const int64_t *meta, void *const *buffers)`: `meta`
/// is a constant with the operand and result counts, every buffer's rank
/// and sizes, then `words`; `buffers` holds the operands' addresses, then
/// those of fresh result buffers the callee fills (returned as tensors).
/// With `retainsBuffers` the callee may still write the buffers after it
/// returns (a pipeline's receive): the call carries kRetainsBuffersAttr
/// and het-free-at-last-use keeps them to the end of their block.
/// `channelBlocked` (operands, then results; empty: none) sets the
/// channel-blocked layout in those buffers' rank words.
SmallVector<Value> emitRuntimeCall(OpBuilder &b, ModuleOp module, Location loc, StringRef callee,
                                   ValueRange operands, TypeRange resultTypes,
                                   ArrayRef<int64_t> words, bool retainsBuffers = false,
                                   ArrayRef<bool> channelBlocked = {});

/// The address of `tensor`'s (contiguous) buffer as an !llvm.ptr, for
/// runtime calls that read it.
Value tensorAddress(OpBuilder &b, Location loc, Value tensor);

/// Ops that KernelLibrary::Cudnn lowers to hetrt_cudnn_<op> (convolutions
/// and their gradients, any groups).
bool hasCudnnKernel(Operation *op);

/// A buffer's address as an !llvm.ptr (what a call into libhetrt takes).
Value bufferAddress(OpBuilder &b, Location loc, Value memref);

/// Declares `name` in `module` as a private function of `type` unless it
/// exists (runtime entry points are declared once, used many times).
void declareRuntimeFunction(ModuleOp module, StringRef name, FunctionType type);

} // namespace mlir::het

#endif
