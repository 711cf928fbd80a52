//===- Rebatch.cpp - a model at another batch size, its loss weighted -----===//

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "het/Dialect/Het/Transforms/ShapeRespecialization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETREBATCH
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

struct HetRebatchPass : public mlir::het::impl::HetRebatchBase<HetRebatchPass> {
  using HetRebatchBase::HetRebatchBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp model;
    for (auto f : module.getOps<func::FuncOp>())
      if (function.empty() ? isForwardModel(f) : f.getName() == function) {
        model = f;
        break;
      }
    if (!model) {
      module.emitError("het-rebatch: no forward model ")
          << (function.empty() ? "(a function returning a 0-d float loss, then any state it updates)"
                               : "named '" + function + "'");
      return signalPassFailure();
    }
    if (samples < 1) {
      model.emitError("het-rebatch needs samples >= 1, got ") << int64_t(samples);
      return signalPassFailure();
    }
    // The model's batch: the first dimension of its first data argument.
    int64_t batch = 0;
    for (unsigned i = 0; i < model.getNumArguments() && batch == 0; ++i) {
      auto type = dyn_cast<RankedTensorType>(model.getArgumentTypes()[i]);
      if (type && type.getRank() >= 1 && !model.getArgAttr(i, HetDialect::getParamAttrName()) &&
          !model.getArgAttr(i, HetDialect::getStateAttrName()))
        batch = type.getDimSize(0);
    }
    if (batch <= 0) {
      model.emitError("het-rebatch: @") << model.getName()
                                        << " has no data argument with a batch dimension";
      return signalPassFailure();
    }
    SmallVector<Type> oldTypes(model.getArgumentTypes());
    SmallVector<Type> newTypes = oldTypes;
    for (unsigned i = 0; i < model.getNumArguments(); ++i) {
      auto type = dyn_cast<RankedTensorType>(oldTypes[i]);
      if (!type || type.getRank() < 1 || type.getDimSize(0) != batch ||
          model.getArgAttr(i, HetDialect::getParamAttrName()) ||
          model.getArgAttr(i, HetDialect::getStateAttrName()))
        continue;
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = samples;
      newTypes[i] = RankedTensorType::get(shape, type.getElementType());
      model.getArgument(i).setType(newTypes[i]);
    }
    model.setType(FunctionType::get(&getContext(), newTypes, model.getResultTypes()));
    RespecializeOptions options;
    options.batch = {batch, samples};
    if (failed(respecializeShapes(model, options, oldTypes)))
      return signalPassFailure();

    int64_t whole = microBatch > 0 ? microBatch : samples;
    if (whole == samples)
      return;
    if (whole < samples) {
      model.emitError("het-rebatch: a share of ")
          << int64_t(samples) << " samples is larger than the micro-batch of " << whole;
      return signalPassFailure();
    }
    // The share's weight in the micro-batch's mean loss.
    auto ret = cast<func::ReturnOp>(model.getBody().front().getTerminator());
    Value loss = ret.getOperand(0);
    OpBuilder b(ret);
    auto type = cast<RankedTensorType>(loss.getType());
    Value weight = b.create<arith::ConstantOp>(
        ret.getLoc(), DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(),
                                                                 double(samples) / whole)));
    Value weighted = b.create<MulOp>(ret.getLoc(), loss, weight);
    if (Operation *def = loss.getDefiningOp())
      if (auto layer = def->getAttr(HetDialect::getLayerAttrName()))
        weighted.getDefiningOp()->setAttr(HetDialect::getLayerAttrName(), layer);
    ret.setOperand(0, weighted);
  }
};

} // namespace
