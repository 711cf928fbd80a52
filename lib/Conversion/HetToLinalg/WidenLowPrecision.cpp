//===- WidenLowPrecision.cpp - f32 compute for ops without a bf16 kernel ----===//
//
// After het-autocast, matrix products and convolutions hold bf16 (or f16)
// operands, and so do the ops that read their results (activations,
// element-wise arithmetic, their gradients, reshapes). Only oneDNN's
// products and convolutions have bf16 kernels here; every other op is
// rebuilt on f32 operands (casts up) with f32 results (cast back to their
// format), so it runs on the f32 kernels and generated code as before and
// its results are rounded once, as PyTorch's CPU kernels compute a bf16
// element-wise op in f32 and round its output. het.elementwise bodies are
// retyped too: their block arguments, scalar ops and constants become f32.
// Each widened op's result is cast back to its declared format even where
// the next op widens it again: that is the rounding PyTorch does after
// every bf16 op, and the reference evaluator after every bf16 result.
//
// On NVIDIA GPUs with the vendor libraries (KernelLibrary::Cudnn) the
// matrix products keep their bf16/f16 operands and only their results
// widen: the generated contraction reads 16-bit operands and accumulates
// in f32 (the values an f32 product of the rounded operands gives: the
// product of two bf16 or f16 values is exact in f32), which
// het-gpu-contractions-to-cublas hands to cublasGemmEx on the tensor
// cores. Their results are then rounded once, as cuBLAS's 16-bit GEMMs
// under PyTorch's CUDA autocast round theirs. Generated CPU contractions
// (KernelLibrary::Mlir) with native bf16 products do the same in bf16:
// het-tile-contractions runs them on the AVX512-BF16 dot product. Convolutions without a bias
// keep their 16-bit operands and result whole: hetrt_cudnn_conv2d* in
// bf16/f16 with f32 arithmetic (CudnnConvolution.cpp).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::het;

namespace {

bool isLow(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  Type element = tensor ? tensor.getElementType() : type;
  return element.isBF16() || element.isF16();
}

/// Retypes the scalar code of a het.elementwise body from bf16/f16 to f32.
void widenBody(Region &body, Type f32) {
  for (BlockArgument argument : body.getArguments())
    if (isLow(argument.getType()))
      argument.setType(f32);
  body.walk([&](Operation *op) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op))
      if (auto value = dyn_cast<FloatAttr>(constant.getValue()); value && isLow(value.getType()))
        constant.setValueAttr(FloatAttr::get(f32, value.getValueAsDouble()));
    for (Value result : op->getResults())
      if (isLow(result.getType()))
        result.setType(f32);
  });
}

} // namespace

/// Rebuilds each of `ops` with f32 results, between casts, and on f32
/// operands unless `resultsOnly`.
static void widen(ArrayRef<Operation *> ops, bool resultsOnly = false) {
  if (ops.empty())
    return;
  Type f32 = Float32Type::get(ops.front()->getContext());
  for (Operation *op : ops) {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands())
      if (!resultsOnly && isLow(operand.get().getType())) {
        auto type = cast<RankedTensorType>(operand.get().getType()).clone(f32);
        operand.set(b.create<CastOp>(op->getLoc(), type, operand.get()));
      }
    b.setInsertionPointAfter(op);
    for (Value result : op->getResults()) {
      if (!isLow(result.getType()))
        continue;
      auto declared = cast<RankedTensorType>(result.getType());
      result.setType(declared.clone(f32));
      auto back = b.create<CastOp>(op->getLoc(), declared, result);
      result.replaceAllUsesExcept(back.getResult(), back);
    }
    for (Region &region : op->getRegions())
      widenBody(region, f32);
  }
}

static bool hasLowType(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), isLow) || llvm::any_of(op->getResultTypes(), isLow);
}

bool mlir::het::accumulatesLowPrecisionInF32(Operation *op, KernelLibrary library,
                                             bool nativeBf16) {
  if (!isa<MatmulOp, LinearOp, LinearGradOp>(op))
    return false;
  // Generated CPU contractions read bf16 pairs into the AVX512-BF16 dot
  // product (het-tile-contractions); f16 has no dot product on x86.
  bool cpuBf16 = library == KernelLibrary::Mlir && nativeBf16;
  if (library != KernelLibrary::Cudnn && !cpuBf16)
    return false;
  // Every floating-point operand in one 16-bit format: a GEMM's A and B
  // share one type (an f32 operand beside bf16 ones widens the op whole).
  Type format;
  for (Type type : op->getOperandTypes()) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !isLow(tensor) || (format && tensor.getElementType() != format))
      return false;
    format = tensor.getElementType();
  }
  return library == KernelLibrary::Cudnn || (format && format.isBF16());
}

void mlir::het::widenLowPrecision(func::FuncOp function, KernelLibrary library, bool nativeBf16) {
  SmallVector<Operation *> ops, accumulating;
  function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<HetDialect>(op->getDialect()))
      return WalkResult::advance();
    // --bf16-products chooses for oneDNN on this CPU; cuDNN's 16-bit
    // convolutions run on the GPU's tensor cores whatever this CPU does.
    bool keepsFormat = hasLowPrecisionKernel(op, library) &&
                       (nativeBf16 || library == KernelLibrary::Cudnn);
    if (!hasLowType(op) || isa<CastOp>(op) || keepsFormat)
      return WalkResult::skip();
    (accumulatesLowPrecisionInF32(op, library, nativeBf16) ? accumulating : ops).push_back(op);
    return WalkResult::skip(); // het.elementwise bodies go with their op
  });
  widen(ops);
  widen(accumulating, /*resultsOnly=*/true);
}

void mlir::het::widenLowPrecisionCommunication(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    // Messages between stages move their 16-bit values as they are (half
    // the bytes of f32): a receiver copies activations and gradients split
    // by sample, and adds up the parts of a gradient that is not (a partial
    // sum) in f32, rounding the total once to its format (PipelineComm's
    // PartialSum), which is what its cast of an f32 sum would do.
    // Collectives reduce in f32: those widen.
    if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, TransferOp>(op) && hasLowType(op))
      ops.push_back(op);
  });
  widen(ops);
}
