//===- InferLayers.cpp - give every compute op a het.layer ----------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETINFERLAYERS
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {
struct InferLayersPass : mlir::het::impl::HetInferLayersBase<InferLayersPass> {
  using HetInferLayersBase::HetInferLayersBase;

  void runOnOperation() override {
    if (defaultLayer < 0) {
      emitError(getOperation().getLoc())
          << "het-infer-layers: default-layer must be >= 0, got "
          << static_cast<int64_t>(defaultLayer);
      return signalPassFailure();
    }
    StringRef name = HetDialect::getLayerAttrName();
    Builder builder(&getContext());
    // Ops are visited in program order, so producers are annotated first.
    getOperation().walk([&](Operation *op) {
      if (!isa<HetDialect>(op->getDialect()) || op->getNumResults() == 0 ||
          op->hasAttr(name) || op->getParentOfType<StageOp>())
        return;
      std::optional<int64_t> layer;
      for (Value operand : op->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (!producer)
          continue;
        if (auto attr = producer->getAttrOfType<IntegerAttr>(name))
          layer = std::max(layer.value_or(0), attr.getInt());
      }
      op->setAttr(name, builder.getI64IntegerAttr(layer.value_or(defaultLayer)));
    });
  }
};
} // namespace
