//===- Autocast.cpp - mixed precision by PyTorch's autocast policy ---------===//
//
// Walks the forward model in order and gives each op the format its class
// asks for (Passes.td, HetAutocast): the matrix-product ops run in the low
// format, losses, normalizations, softmax, reductions and element-wise
// chains in f32, the rest in their operands' widest format. Operands of
// another format get a het.cast; results are retyped in place, which every
// later op then sees as its operands' format. Casts of one value to one
// format are made once (a parameter used by two layers has one low copy).
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::het {
#define GEN_PASS_DEF_HETAUTOCAST
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

/// The float element type of `value`, or null for integer tensors and
/// non-tensors.
FloatType floatElement(Value value) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  return tensor ? dyn_cast<FloatType>(tensor.getElementType()) : FloatType();
}

enum class Policy { Low, F32, Widest };

/// PyTorch's CPU lists, on het's ops.
Policy policyOf(Operation *op) {
  if (isa<MatmulOp, LinearOp, Conv2dOp, AttentionOp>(op))
    return Policy::Low;
  // Element-wise chains compute in f32: their bodies are scalar code in
  // their operands' format, and PyTorch computes each bf16 element-wise op
  // in f32 anyway (rounding after each; the chain rounds once).
  if (isa<CrossEntropyOp, BatchNormOp, BatchNormReluOp, BatchNormInferenceOp,
          BatchNormRunningStatsOp, LayerNormOp, RMSNormOp, SoftmaxOp, ReduceSumOp, ReduceMeanOp,
          ReduceMaxOp, ElementwiseOp>(op))
    return Policy::F32;
  return Policy::Widest;
}

/// The wider of two formats (f32 where neither holds the other).
FloatType wider(FloatType a, FloatType b, FloatType f32) {
  if (!a)
    return b;
  if (!b || a == b)
    return a;
  if (a.getWidth() != b.getWidth())
    return a.getWidth() > b.getWidth() ? a : b;
  return f32; // bf16 and f16: PyTorch promotes to f32
}

struct AutocastPass : mlir::het::impl::HetAutocastBase<AutocastPass> {
  using HetAutocastBase::HetAutocastBase;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    MLIRContext *context = &getContext();
    FloatType f32 = Float32Type::get(context);
    // The format each name stands for; fp32 keeps a product in f32.
    auto formatOf = [&](StringRef name) -> FloatType {
      if (name == "bf16")
        return BFloat16Type::get(context);
      if (name == "fp16" || name == "f16")
        return Float16Type::get(context);
      if (name == "fp32" || name == "f32")
        return f32;
      return FloatType();
    };
    FloatType low = formatOf(precision);
    if (!low) {
      function.emitError("het-autocast: unknown precision '")
          << precision << "' (use bf16, fp16 or fp32)";
      return signalPassFailure();
    }
    SmallVector<FloatType> layerLow;
    for (auto [layer, name] : llvm::enumerate(layerPrecisions)) {
      layerLow.push_back(formatOf(name));
      if (!layerLow.back()) {
        function.emitError("het-autocast: unknown format '")
            << name << "' for layer " << layer << " in layer-precisions (use fp32, bf16 or fp16)";
        return signalPassFailure();
      }
    }
    // The low format of `op`: its layer's, else the pass-wide one.
    auto lowFor = [&](Operation *op) {
      if (auto layer = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
        if (layer.getInt() >= 0 && size_t(layer.getInt()) < layerLow.size())
          return layerLow[layer.getInt()];
      return low;
    };
    bool failedHere = false;
    function.walk([&](Operation *op) {
      if (isa<SGDOp, AdamOp>(op)) {
        op->emitOpError("het-autocast runs on the forward model, before het-autodiff; this is "
                        "already a training step");
        failedHere = true;
      }
    });
    if (failedHere)
      return signalPassFailure();

    // One cast per (value, format), placed just before the first op that
    // needs it and in that op's layer (het.layer), so that a parameter's
    // low copy lives in the stage of the layer that reads it.
    llvm::DenseMap<std::pair<Value, Type>, Value> casts;
    auto castTo = [&](Value value, FloatType format, Operation *user) -> Value {
      if (floatElement(value) == format)
        return value;
      auto key = std::make_pair(value, Type(format));
      if (Value known = casts.lookup(key))
        return known;
      OpBuilder b(user);
      auto type = cast<RankedTensorType>(value.getType()).clone(format);
      auto made = b.create<CastOp>(value.getLoc(), type, value);
      if (Attribute layer = user->getAttr(HetDialect::getLayerAttrName()))
        made->setAttr(HetDialect::getLayerAttrName(), layer);
      casts[key] = made;
      return made;
    };

    // A 16-bit value crossing an f32 boundary (the end of a stage whose
    // replicas differ in format) leaves its layer in f32: cast once, just
    // after the op that makes it and in its layer, so that the cast runs in
    // the sending stage.
    auto layerOf = [](Operation *op) -> std::optional<int64_t> {
      if (!op)
        return std::nullopt;
      if (auto layer = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
        return layer.getInt();
      return std::nullopt;
    };
    auto crossesBoundary = [&](int64_t from, int64_t to) {
      return llvm::any_of(f32Boundaries,
                          [&](int64_t boundary) { return from < boundary && boundary <= to; });
    };
    llvm::DenseMap<Value, Value> widened;
    auto leaveInF32 = [&](Value value) -> Value {
      if (Value known = widened.lookup(value))
        return known;
      Operation *producer = value.getDefiningOp();
      OpBuilder b(producer->getContext());
      b.setInsertionPointAfter(producer);
      auto type = cast<RankedTensorType>(value.getType()).clone(f32);
      auto made = b.create<CastOp>(value.getLoc(), type, value);
      made->setAttr(HetDialect::getLayerAttrName(),
                    producer->getAttr(HetDialect::getLayerAttrName()));
      made->setAttr(kF32BoundaryAttrName, b.getUnitAttr());
      widened[value] = made;
      return made;
    };

    SmallVector<Operation *> ops;
    for (Operation &op : function.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (std::optional<int64_t> to = layerOf(op); to && !f32Boundaries.empty())
        for (OpOperand &operand : op->getOpOperands()) {
          FloatType format = floatElement(operand.get());
          std::optional<int64_t> from = layerOf(operand.get().getDefiningOp());
          if (format && format.getWidth() == 16 && from && crossesBoundary(*from, *to))
            operand.set(leaveInF32(operand.get()));
        }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        // Results keep their declared formats.
        auto declared = function.getFunctionType().getResults();
        for (auto [i, operand] : llvm::enumerate(ret.getOperands()))
          if (auto format = dyn_cast_or_null<FloatType>(getElementTypeOrSelf(declared[i])))
            if (floatElement(operand) && floatElement(operand) != format)
              ret.setOperand(i, castTo(operand, format, ret));
        continue;
      }
      if (!isa<HetDialect>(op->getDialect()) || isa<CastOp>(op))
        continue;
      FloatType target;
      switch (policyOf(op)) {
      case Policy::Low:
        target = lowFor(op);
        break;
      case Policy::F32:
        target = f32;
        break;
      case Policy::Widest:
        for (Value operand : op->getOperands())
          target = wider(target, floatElement(operand), f32);
        break;
      }
      if (!target)
        continue; // no float operand: its results keep their types
      for (OpOperand &operand : op->getOpOperands())
        if (FloatType format = floatElement(operand.get()); format && format != target)
          operand.set(castTo(operand.get(), target, op));
      for (Value result : op->getResults())
        if (floatElement(result) && floatElement(result) != target)
          result.setType(cast<RankedTensorType>(result.getType()).clone(target));
    }
  }
};

} // namespace
