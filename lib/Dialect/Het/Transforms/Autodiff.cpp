//===- Autodiff.cpp - het-autodiff: gradients and optimizer updates -------===//
//
// Reverse mode on a straight-line function: clone the forward function,
// mark the values that depend on a parameter ("active"), then visit the ops
// backwards and let each active op build its operands' gradients from its
// results' gradients (DifferentiableOpInterface). Gradients of a value used
// several times are summed. Finally one optimizer op per parameter, and a
// new signature that threads parameters and optimizer state through.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/Transforms/Autodiff.h"

#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETAUTODIFF
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

/// Stamps the `het.layer` of the forward op being differentiated on every
/// op the gradient rules create, so backward ops land in the forward op's
/// pipeline stage.
struct LayerStamper : OpBuilder::Listener {
  IntegerAttr layer;
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    if (layer && isa<HetDialect>(op->getDialect()))
      op->setAttr(HetDialect::getLayerAttrName(), layer);
  }
};

Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  Attribute zero = isa<FloatType>(tensor.getElementType())
                       ? Attribute(b.getFloatAttr(tensor.getElementType(), 0.0))
                       : Attribute(b.getIntegerAttr(tensor.getElementType(), 0));
  return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(tensor, zero));
}

/// The forward function's shape: one block, the 0-d float loss first, then
/// any state it updates (see whyNotForwardModel).
LogicalResult checkDifferentiable(func::FuncOp forward) {
  std::string why = whyNotForwardModel(forward);
  if (!why.empty())
    return forward.emitError("het-autodiff: @") << forward.getSymName() << ' ' << why;
  bool hasParam = false;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    hasParam |= static_cast<bool>(forward.getArgAttr(i, HetDialect::getParamAttrName()));
  if (!hasParam)
    return forward.emitError("het-autodiff: @")
           << forward.getSymName() << " has no het.param argument to differentiate";
  return success();
}

} // namespace

FailureOr<func::FuncOp> mlir::het::buildTrainingStep(func::FuncOp forward,
                                                     const TrainingStepOptions &options) {
  if (failed(checkDifferentiable(forward)))
    return failure();
  auto module = forward->getParentOfType<ModuleOp>();
  std::string stepName = (forward.getSymName() + kTrainStepSuffix).str();
  if (module && SymbolTable::lookupSymbolIn(module, stepName))
    return forward.emitError("het-autodiff: @")
           << stepName << " already exists; rename it or pass function=<name>";

  OpBuilder moduleBuilder(forward->getContext());
  moduleBuilder.setInsertionPointAfter(forward);
  auto step = cast<func::FuncOp>(moduleBuilder.clone(*forward));
  step.setSymName(stepName);
  step.setPrivate();
  step.setVisibility(forward.getVisibility());
  Block &body = step.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(0);
  Location loc = step.getLoc();

  // Parameters and the values that depend on them.
  SmallVector<unsigned> params;
  llvm::DenseSet<Value> active;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, HetDialect::getParamAttrName())) {
      params.push_back(i);
      active.insert(step.getArgument(i));
    }
  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator()) {
    forwardOps.push_back(&op);
    if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value result : op.getResults())
        if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
          active.insert(result);
  }

  LayerStamper stamper;
  OpBuilder b(forward->getContext(), &stamper);
  b.setInsertionPoint(ret);
  llvm::DenseMap<Value, Value> gradients;
  auto accumulate = [&](Value value, Value gradient) {
    auto [it, inserted] = gradients.try_emplace(value, gradient);
    if (!inserted)
      it->second = b.create<AddOp>(gradient.getLoc(), it->second, gradient);
  };

  // Signature: original arguments, then optimizer state.
  MLIRContext *context = forward->getContext();
  auto nameAttr = [&](const std::string &name) {
    return b.getNamedAttr(HetDialect::getNameAttrName(), b.getStringAttr(name));
  };
  // State arguments go on the block now and into the signature once at the
  // end: inserting them one by one rebuilds the signature and its attribute
  // array each time, quadratic in a deep model's thousands of them.
  SmallVector<DictionaryAttr> argumentAttrs;
  step.getAllArgAttrs(argumentAttrs);
  auto addState = [&](Type type, const std::string &name) {
    argumentAttrs.push_back(b.getDictionaryAttr(
        {nameAttr(name),
         b.getNamedAttr(HetDialect::getStateAttrName(), UnitAttr::get(context))}));
    return body.addArgument(type, loc);
  };

  // Dynamic loss scaling: the scale is init_scale times a state ratio
  // that starts at 1 (so a new job needs no initial value), with the count
  // of good steps beside it.
  Value scaleRatio, growthTracker, lossScale;
  auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
  if (options.lossScaling) {
    stamper.layer = {};
    scaleRatio = addState(scalarF32, "amp.scale_ratio");
    growthTracker = addState(scalarF32, "amp.growth_tracker");
    Value init = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(scalarF32, b.getF32FloatAttr(static_cast<float>(
                                                   options.initScale))));
    lossScale = b.create<MulOp>(loc, scaleRatio, init);
  }

  if (active.contains(loss)) {
    auto lossType = cast<RankedTensorType>(loss.getType());
    stamper.layer = loss.getDefiningOp()
                        ? loss.getDefiningOp()->getAttrOfType<IntegerAttr>(
                              HetDialect::getLayerAttrName())
                        : IntegerAttr();
    // The backward of loss * scale starts from the scale (GradScaler.scale).
    Value seed = lossScale;
    if (seed && seed.getType() != lossType)
      seed = b.create<CastOp>(loc, lossType, seed);
    if (!seed)
      seed = b.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(lossType, b.getFloatAttr(lossType.getElementType(), 1.0)));
    accumulate(loss, seed);
  }

  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGradients;
    bool any = false;
    for (Value result : op->getResults()) {
      resultGradients.push_back(gradients.lookup(result));
      any |= static_cast<bool>(resultGradients.back());
    }
    if (!any)
      continue;
    auto differentiable = dyn_cast<DifferentiableOpInterface>(op);
    if (!differentiable)
      return op->emitOpError("has no gradient rule, but lies on the path from a "
                             "parameter to the loss of @")
             << forward.getSymName();
    stamper.layer = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName());
    SmallVector<Value> operandGradients;
    if (failed(differentiable.buildGradients(b, resultGradients, operandGradients)))
      return failure();
    for (auto [operand, gradient] : llvm::zip(op->getOperands(), operandGradients))
      if (gradient && active.contains(operand))
        accumulate(operand, gradient);
  }

  SmallVector<Value> results{loss};
  SmallVector<std::string> resultNames{"loss"};
  // State the forward model updates (BatchNorm's running statistics) keeps
  // its name: the runners feed it back like optimizer state.
  SmallVector<std::pair<Value, std::string>> forwardState;
  for (unsigned r = 1; r < ret.getNumOperands(); ++r)
    forwardState.push_back({ret.getOperand(r), resultName(forward, r)});
  Value adamStep;
  if (options.optimizer == OptimizerKind::Adam) {
    stamper.layer = {};
    Value counter = addState(RankedTensorType::get({}, b.getI64Type()), "adam.step");
    Value one = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                    b.getI64IntegerAttr(1)));
    adamStep = b.create<arith::AddIOp>(loc, counter, one);
  }
  SmallVector<std::pair<Value, std::string>> stateResults;
  // Each parameter's gradient, and the layer of its first use, where its
  // update belongs.
  SmallVector<Value> parameterGradients;
  SmallVector<IntegerAttr> parameterLayers;
  for (unsigned index : params) {
    Value param = step.getArgument(index);
    IntegerAttr layer;
    for (Operation *user : param.getUsers())
      if ((layer = user->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName())))
        break;
    stamper.layer = layer;
    Value gradient = gradients.lookup(param);
    if (!gradient) // the loss does not depend on it
      gradient = zerosLike(b, loc, param.getType());
    parameterGradients.push_back(gradient);
    parameterLayers.push_back(layer);
  }
  // Loss scaling: the gradients of the scaled loss divided by the scale;
  // where any is inf or NaN, nothing below changes (GradScaler skips the
  // optimizer's step and lowers the scale).
  Value foundInf;
  auto keepUnlessFound = [&](Value old, Value updated) -> Value {
    return foundInf ? b.create<SelectOp>(loc, foundInf, old, updated).getResult() : updated;
  };
  if (options.lossScaling) {
    stamper.layer = {};
    auto unscale = b.create<UnscaleGradientsOp>(loc, scalarF32, ValueRange(parameterGradients).getTypes(),
                                                lossScale, parameterGradients);
    foundInf = unscale.getFoundInf();
    parameterGradients.assign(unscale.getUnscaled().begin(), unscale.getUnscaled().end());
  }
  // Clipping by the global norm, of the unscaled gradients (as one calls
  // GradScaler.unscale_ before clip_grad_norm_).
  if (options.clipGradNorm > 0.0 && !parameterGradients.empty()) {
    stamper.layer = {};
    Value squared = b.create<SquaredNormOp>(loc, scalarF32, parameterGradients,
                                            b.getF64FloatAttr(1.0));
    auto clip = b.create<ClipByNormOp>(loc, ValueRange(parameterGradients).getTypes(), squared,
                                       parameterGradients, b.getF64FloatAttr(options.clipGradNorm));
    parameterGradients.assign(clip.getClipped().begin(), clip.getClipped().end());
  }
  for (auto [position, index] : llvm::enumerate(params)) {
    Value param = step.getArgument(index);
    std::string key = argumentName(step, index);
    stamper.layer = parameterLayers[position];
    Value gradient = parameterGradients[position];
    switch (options.optimizer) {
    case OptimizerKind::None:
      results.push_back(gradient);
      resultNames.push_back(key + ".grad");
      break;
    case OptimizerKind::SGD: {
      bool keepsBuffer = options.momentum != 0.0;
      Value buffer = keepsBuffer ? addState(param.getType(), key + ".momentum_buffer")
                                 : zerosLike(b, loc, param.getType());
      Type type = param.getType();
      auto update = b.create<SGDOp>(loc, TypeRange{type, type}, param, gradient, buffer,
                                    b.getF64FloatAttr(options.learningRate),
                                    b.getF64FloatAttr(options.momentum),
                                    b.getF64FloatAttr(options.weightDecay),
                                    options.nesterov ? b.getUnitAttr() : UnitAttr());
      results.push_back(keepUnlessFound(param, update.getNewParam()));
      resultNames.push_back(key);
      if (keepsBuffer)
        stateResults.push_back(
            {keepUnlessFound(buffer, update.getNewMomentumBuffer()), key + ".momentum_buffer"});
      break;
    }
    case OptimizerKind::Adam: {
      Value expAvg = addState(param.getType(), key + ".exp_avg");
      Value expAvgSq = addState(param.getType(), key + ".exp_avg_sq");
      Type type = param.getType();
      auto update = b.create<AdamOp>(
          loc, TypeRange{type, type, type}, param, gradient, expAvg, expAvgSq, adamStep,
          b.getF64FloatAttr(options.learningRate), b.getF64FloatAttr(options.beta1),
          b.getF64FloatAttr(options.beta2), b.getF64FloatAttr(options.epsilon),
          b.getF64FloatAttr(options.weightDecay),
          options.decoupled ? b.getUnitAttr() : UnitAttr());
      results.push_back(keepUnlessFound(param, update.getNewParam()));
      resultNames.push_back(key);
      stateResults.push_back({keepUnlessFound(expAvg, update.getNewExpAvg()), key + ".exp_avg"});
      stateResults.push_back(
          {keepUnlessFound(expAvgSq, update.getNewExpAvgSq()), key + ".exp_avg_sq"});
      break;
    }
    }
  }
  if (options.lossScaling) {
    stamper.layer = {};
    auto update = b.create<LossScaleUpdateOp>(
        loc, TypeRange{scalarF32, scalarF32}, foundInf, scaleRatio, growthTracker,
        b.getF64FloatAttr(options.initScale), b.getF64FloatAttr(options.growthFactor),
        b.getF64FloatAttr(options.backoffFactor), b.getI64IntegerAttr(options.growthInterval));
    stateResults.push_back({update.getNewRatio(), "amp.scale_ratio"});
    stateResults.push_back({update.getNewGrowthTracker(), "amp.growth_tracker"});
  }
  for (auto &[value, name] : stateResults) {
    results.push_back(value);
    resultNames.push_back(name);
  }
  if (adamStep) {
    // A skipped step does not count (PyTorch's Adam never ran it).
    results.push_back(keepUnlessFound(adamStep.getDefiningOp()->getOperand(0), adamStep));
    resultNames.push_back("adam.step");
  }
  for (auto &[value, name] : forwardState) {
    results.push_back(value);
    resultNames.push_back(name);
  }

  ret->setOperands(results);
  SmallVector<Type> resultTypes;
  for (Value value : results)
    resultTypes.push_back(value.getType());
  // The forward function's result attributes (e.g. a het.name on the loss)
  // describe one result; the step's are set below.
  step.setFunctionType(FunctionType::get(context, body.getArgumentTypes(), resultTypes));
  step.setAllArgAttrs(argumentAttrs);
  SmallVector<DictionaryAttr> resultAttrs;
  for (const std::string &name : resultNames)
    resultAttrs.push_back(b.getDictionaryAttr({nameAttr(name)}));
  step.setAllResultAttrs(resultAttrs);

  // Gradient rules compute every operand's gradient; drop those nobody
  // needs (e.g. the gradient of the input batch).
  SmallVector<Operation *> all;
  for (Operation &op : body.without_terminator())
    all.push_back(&op);
  for (Operation *op : llvm::reverse(all))
    if (isOpTriviallyDead(op))
      op->erase();
  return step;
}

namespace {
struct AutodiffPass : mlir::het::impl::HetAutodiffBase<AutodiffPass> {
  using HetAutodiffBase::HetAutodiffBase;

  void runOnOperation() override {
    TrainingStepOptions options;
    if (optimizer == "sgd")
      options.optimizer = OptimizerKind::SGD;
    else if (optimizer == "adam")
      options.optimizer = OptimizerKind::Adam;
    else if (optimizer == "none")
      options.optimizer = OptimizerKind::None;
    else {
      emitError(getOperation().getLoc())
          << "het-autodiff: optimizer must be sgd, adam or none, got '" << optimizer << "'";
      return signalPassFailure();
    }
    if (!(learningRate > 0.0) || momentum < 0.0 || weightDecay < 0.0 || !(clipGradNorm >= 0.0) ||
        !(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0) || !(epsilon > 0.0)) {
      emitError(getOperation().getLoc())
          << "het-autodiff: need learning-rate > 0, momentum >= 0, weight-decay >= 0, "
             "clip-grad-norm >= 0, "
             "0 <= beta1, beta2 < 1 and epsilon > 0";
      return signalPassFailure();
    }
    options.learningRate = learningRate;
    options.momentum = momentum;
    options.nesterov = nesterov;
    options.weightDecay = weightDecay;
    options.beta1 = beta1;
    options.beta2 = beta2;
    options.epsilon = epsilon;
    options.decoupled = decoupled;
    options.clipGradNorm = clipGradNorm;
    options.lossScaling = lossScale;
    options.initScale = initScale;
    options.growthFactor = growthFactor;
    options.backoffFactor = backoffFactor;
    options.growthInterval = growthInterval;
    if (lossScale && (!(initScale > 0) || !(growthFactor > 1) || !(backoffFactor > 0) ||
                      !(backoffFactor < 1) || growthInterval < 1)) {
      getOperation().emitError("het-autodiff: loss scaling needs init-scale > 0, growth-factor > 1, "
                               "0 < backoff-factor < 1 and growth-interval >= 1");
      return signalPassFailure();
    }

    SmallVector<func::FuncOp> targets;
    ModuleOp module = getOperation();
    if (!function.empty()) {
      auto target = module.lookupSymbol<func::FuncOp>(function);
      if (!target) {
        emitError(module.getLoc()) << "het-autodiff: no function @" << function;
        return signalPassFailure();
      }
      targets.push_back(target);
    } else {
      for (auto candidate : module.getOps<func::FuncOp>()) {
        bool hasParam = false;
        for (unsigned i = 0; i < candidate.getNumArguments(); ++i)
          hasParam |= static_cast<bool>(candidate.getArgAttr(i, HetDialect::getParamAttrName()));
        bool isStep = candidate.getSymName().ends_with(kTrainStepSuffix);
        if (hasParam && !isStep)
          targets.push_back(candidate);
      }
    }
    for (func::FuncOp target : targets)
      if (failed(buildTrainingStep(target, options)))
        return signalPassFailure();
  }
};
} // namespace
