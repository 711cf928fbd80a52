//===- Recompute.cpp - activation recomputation in the backward ------------===//
//
// After het-autodiff a training step is the forward (up to the loss), then
// the backward and the update, in one block. Every forward value the
// backward reads lives from the forward to its last backward read: for a
// transformer, the attention scores, norms, MLP hidden states of every
// block at once. This pass lets the backward recompute them instead
// (Passes.td, HetRecompute): for each backward operand that is a forward
// value of a recomputed layer and not kept anyway, it clones the forward
// ops computing it just before that backward op, recursively from kept
// values, memoized so each forward op is cloned once. The forward's value
// then dies in the forward (the buffers are freed at their last use), and
// the clone lives only in its layer's backward.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETRECOMPUTE
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

enum class Mode { None, Selective, Full };

std::optional<Mode> parseMode(StringRef name) {
  if (name == "none")
    return Mode::None;
  if (name == "selective")
    return Mode::Selective;
  if (name == "full")
    return Mode::Full;
  return std::nullopt;
}

std::optional<int64_t> layerOf(Operation *op) {
  if (auto layer = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
    return layer.getInt();
  return std::nullopt;
}

/// The ops selective recomputation keeps the results of: the matrix
/// products and convolutions, where the step's time goes.
bool isExpensive(Operation *op) { return isa<LinearOp, MatmulOp, Conv2dOp>(op); }

int64_t bytesOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// The op computing a training step's loss (its first result, named
/// "loss"), or null for functions that are no training step.
Operation *lossOp(func::FuncOp function) {
  if (function.isExternal() || function.getNumResults() == 0)
    return nullptr;
  auto name = function.getResultAttrOfType<StringAttr>(0, "het.name");
  if (!name || name.getValue() != "loss")
    return nullptr;
  auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
  Operation *op = ret.getOperand(0).getDefiningOp();
  return op && op->getBlock() == &function.getBody().front() ? op : nullptr;
}

/// Bytes of forward values (not arguments, not constants) that backward
/// ops read: what the forward keeps for the backward (the returned loss is
/// kept for the caller, not for the backward).
int64_t keptForBackward(Block &block, llvm::DenseSet<Operation *> &forward) {
  llvm::DenseSet<Value> counted;
  int64_t bytes = 0;
  for (Operation &op : block) {
    if (forward.contains(&op) || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && forward.contains(def) && !def->hasTrait<OpTrait::ConstantLike>() &&
          counted.insert(operand).second)
        bytes += bytesOf(operand);
    }
  }
  return bytes;
}

struct RecomputePass : mlir::het::impl::HetRecomputeBase<RecomputePass> {
  using HetRecomputeBase::HetRecomputeBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    std::optional<Mode> fallback = parseMode(mode);
    if (!fallback) {
      function.emitError("het-recompute: mode must be none, selective or full, got '")
          << mode << "'";
      return signalPassFailure();
    }
    SmallVector<Mode> modes;
    for (auto [index, name] : llvm::enumerate(layerModes)) {
      std::optional<Mode> parsed = parseMode(name);
      if (!parsed) {
        function.emitError("het-recompute: layer-modes entry ")
            << index << " must be none, selective or full, got '" << name << "'";
        return signalPassFailure();
      }
      modes.push_back(*parsed);
    }
    Operation *loss = lossOp(function);
    if (!loss)
      return; // no training step: nothing to recompute
    Block &block = function.getBody().front();
    llvm::DenseSet<Operation *> forward;
    for (Operation &op : block) {
      forward.insert(&op);
      if (&op == loss)
        break;
    }
    auto modeOf = [&](Operation *op) {
      std::optional<int64_t> layer = layerOf(op);
      if (!layer)
        return Mode::None;
      return *layer >= 0 && *layer < int64_t(modes.size()) ? modes[*layer] : *fallback;
    };

    // A forward value stays in memory (is not recomputed) when something
    // other than its own layer's forward and the backward reads it: another
    // layer's forward op, an unlayered forward op, the function's return.
    // Those are the layers' inputs and outputs; parameters and data are
    // arguments.
    auto recomputable = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (!def || !forward.contains(def))
        return false;
      Mode m = modeOf(def);
      if (m == Mode::None || def->hasTrait<OpTrait::ConstantLike>() || !isMemoryEffectFree(def) ||
          (m == Mode::Selective && isExpensive(def)))
        return false;
      // Backward reads are what recomputation replaces.
      std::optional<int64_t> layer = layerOf(def);
      return llvm::none_of(value.getUsers(), [&](Operation *user) {
        return isa<func::ReturnOp>(user) || (forward.contains(user) && layerOf(user) != layer);
      });
    };

    int64_t keptBefore = report ? keptForBackward(block, forward) : 0;
    IRMapping recomputed;
    int64_t clones = 0;
    // Clones `value`'s op (and, first, those of its recomputable operands)
    // before `at`; returns the clone's value.
    std::function<Value(Value, Operation *)> recompute = [&](Value value, Operation *at) -> Value {
      if (Value done = recomputed.lookupOrNull(value))
        return done;
      Operation *def = value.getDefiningOp();
      for (Value operand : def->getOperands())
        if (recomputable(operand))
          recompute(operand, at);
      OpBuilder b(at);
      Operation *clone = b.clone(*def, recomputed); // maps its results too
      clone->setAttr(HetDialect::getRecomputedAttrName(), b.getUnitAttr());
      ++clones;
      return recomputed.lookup(value);
    };

    SmallVector<Operation *> backward;
    for (Operation &op : block)
      if (!forward.contains(&op))
        backward.push_back(&op);
    for (Operation *op : backward) {
      // Operands of ops nested in a backward op's regions read through it.
      op->walk([&](Operation *inner) {
        for (OpOperand &operand : inner->getOpOperands())
          if (recomputable(operand.get()))
            operand.set(recompute(operand.get(), op));
      });
    }
    if (report) {
      int64_t keptAfter = keptForBackward(block, forward);
      function.emitRemark(llvm::formatv(
          "het-recompute: the backward recomputes {0} forward ops; the forward keeps {1} bytes "
          "for the backward ({2} without recomputation)",
          clones, keptAfter, keptBefore));
    }
  }
};

} // namespace
