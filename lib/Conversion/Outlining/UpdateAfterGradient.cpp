//===- UpdateAfterGradient.cpp - each update right after its gradient -----===//
//
// Autodiff appends the optimizer updates after the whole backward pass, so
// every gradient stays alive until the end of the step and a layer's
// backward and its updates are two separate runs of `het.layer` ops. This
// pass moves each `het.sgd`/`het.adam` to just after the last of its
// operands is computed (the gradient, as a rule). Then:
//
// - a gradient's buffer is freed as soon as its parameter is updated
//   (PyTorch's "optimizer step in backward"), lowering peak memory by up
//   to the size of all gradients;
// - a layer's backward and updates are one run, which het-outline-layers
//   makes one function: the gradients never reach the step function, whose
//   glue (allocations, calls, arguments) is what grows with depth.
//
// Values are unchanged: the updates read the same values and write new
// ones (in the step's SSA form the old parameter stays readable by the
// rest of the backward pass, and out-parameters never alias inputs).
// A pure operation without a layer that an update needs (the step
// counter's increment) moves up with it.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

bool isUpdate(Operation *op) { return isa<SGDOp, AdamOp>(op); }

/// Whether `op` only combines the step's inputs and constants: pure, no
/// layer, no regions, every operand an argument or a constant (the step
/// counter's increment). Such an op moves up with an update that needs it.
bool isInputOnly(Operation *op, Block &block) {
  if (op->hasAttr(HetDialect::getLayerAttrName()) || !isPure(op) || op->getNumRegions() != 0 ||
      isUpdate(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    Operation *def = operand.getDefiningOp();
    return !def || def->getBlock() != &block || def->hasTrait<OpTrait::ConstantLike>();
  });
}

/// Moves `op` (no regions) up to just after the last definition of its
/// operands in its block.
void moveAfterOperands(Operation *op, Block &block) {
  Operation *latest = nullptr;
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!def || def->getBlock() != &block)
      continue;
    if (isInputOnly(def, block))
      moveAfterOperands(def, block);
    if (!latest || latest->isBeforeInBlock(def))
      latest = def;
  }
  if (!latest) {
    // Only arguments: as early as possible, after the leading constants.
    Operation *first = &block.front();
    while (first != op && first->hasTrait<OpTrait::ConstantLike>())
      first = first->getNextNode();
    if (first != op)
      op->moveBefore(first);
    return;
  }
  if (latest->getNextNode() != op)
    op->moveAfter(latest);
}

struct UpdateAfterGradientPass
    : public PassWrapper<UpdateAfterGradientPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(UpdateAfterGradientPass)

  StringRef getArgument() const override { return "het-update-after-gradient"; }
  StringRef getDescription() const override {
    return "Move each optimizer update to just after its gradient is computed";
  }

  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      SmallVector<Operation *> updates;
      for (Operation &op : block)
        if (isUpdate(&op))
          updates.push_back(&op);
      for (Operation *update : updates)
        moveAfterOperands(update, block);
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createUpdateAfterGradientPass() {
  return std::make_unique<UpdateAfterGradientPass>();
}

namespace mlir::het {
void registerUpdateAfterGradientPass() { PassRegistration<UpdateAfterGradientPass>(); }
} // namespace mlir::het
