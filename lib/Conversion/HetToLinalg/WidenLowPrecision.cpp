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

/// Rebuilds each of `ops` on f32 operands with f32 results, between casts.
static void widen(ArrayRef<Operation *> ops) {
  if (ops.empty())
    return;
  Type f32 = Float32Type::get(ops.front()->getContext());
  for (Operation *op : ops) {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands())
      if (isLow(operand.get().getType())) {
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

void mlir::het::widenLowPrecision(func::FuncOp function, KernelLibrary library, bool nativeBf16) {
  SmallVector<Operation *> ops;
  function.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<HetDialect>(op->getDialect()))
      return WalkResult::advance();
    if (hasLowType(op) && !isa<CastOp>(op) && !(nativeBf16 && hasLowPrecisionKernel(op, library)))
      ops.push_back(op);
    return WalkResult::skip(); // het.elementwise bodies go with their op
  });
  widen(ops);
}

void mlir::het::widenLowPrecisionCommunication(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<SendOp, RecvOp, AllReduceOp, AllGatherOp, ReduceScatterOp, TransferOp>(op) &&
        hasLowType(op))
      ops.push_back(op);
  });
  widen(ops);
}
