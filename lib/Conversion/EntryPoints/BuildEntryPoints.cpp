//===- BuildEntryPoints.cpp - choose what the executable runs --------------===//
//
// At the tensor level, where names, roles and the ops reading each argument
// are still visible: keeps the training step, derives a predict function
// from the forward model, and writes down in `hetrt.model_info` everything the
// runtime needs to drive them -- argument names, shapes, roles, and how
// het-eval --random-inputs would fill each one, so a compiled model and the
// reference evaluator start from identical values for the same seed.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/IR/IntegerInputs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;

namespace {

/// "f32 2 32 64": element type, rank, sizes.
/// `low`: a pipeline stage function's boundary, where bf16 and f16
/// activations pass between its forward and backward; a training step's
/// arguments are f32 and i64 only.
FailureOr<std::string> describeType(Operation *where, Type type, bool low = false) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape()) {
    where->emitError("CPU code generation needs statically shaped tensors at the function "
                     "boundary, got ")
        << type;
    return failure();
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  Type element = tensor.getElementType();
  if (element.isF32())
    os << "f32";
  else if (element.isInteger(64))
    os << "i64";
  else if (low && element.isBF16())
    os << "bf16"; // mixed precision: activations a pipeline stage keeps for its backward
  else if (low && element.isF16())
    os << "f16";
  else {
    where->emitError(low ? "CPU code generation supports f32, bf16, f16 and i64 arguments, got "
                         : "CPU code generation supports f32 and i64 arguments, got ")
        << type;
    return failure();
  }
  os << ' ' << tensor.getRank();
  for (int64_t size : tensor.getShape())
    os << ' ' << size;
  return text;
}

/// Role and initializer of step argument `i`, mirroring
/// het::eval::randomArgument (lib/Eval/RandomInputs.cpp).
std::string roleAndInit(func::FuncOp step, unsigned i) {
  Value argument = step.getArgument(i);
  auto type = cast<RankedTensorType>(argument.getType());
  if (step.getArgAttr(i, HetDialect::getStateAttrName()))
    return startsAtOne(argument) ? "state ones" : "state zeros";
  // Values the PyTorch importer computed at import time (het.name
  // "const.<n>", exported into the .npz beside the model): the runtime
  // takes them from --load and refuses to invent them.
  if (StringRef(argumentName(step, i)).starts_with("const."))
    return "const zeros";
  if (isa<IntegerType>(type.getElementType())) {
    IntegerInput use = integerInput(argument);
    return llvm::formatv("{0} randint {1}", use.kind == IntegerInput::Kind::Label ? "label" : "index",
                         use.bound);
  }
  if (step.getArgAttr(i, HetDialect::getParamAttrName())) {
    if (type.getRank() >= 2) {
      int64_t fanIn = type.getNumElements() / type.getDimSize(0);
      double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
      return llvm::formatv("param uniform {0:e17} {1:e17}", -bound, bound);
    }
    double center = startsAtOne(argument) ? 1.0 : 0.0;
    return llvm::formatv("param uniform {0:e17} {1:e17}", center - 0.1, center + 0.1);
  }
  return "data normal";
}

/// Eval mode: each training-mode batch norm whose statistics feed a
/// het.batch_norm_running_stats normalizes with the running statistics
/// instead (the state arguments, as they are before the step).
void useRunningStatistics(func::FuncOp function) {
  SmallVector<BatchNormRunningStatsOp> updates;
  function.walk([&](BatchNormRunningStatsOp op) { updates.push_back(op); });
  for (BatchNormRunningStatsOp stats : updates) {
    Operation *bn = stats.getMean().getDefiningOp();
    if (!isa_and_nonnull<BatchNormOp, BatchNormReluOp>(bn))
      continue;
    OpBuilder b(bn);
    Operation *normalized = b.create<BatchNormInferenceOp>(
        bn->getLoc(), bn->getOperand(0), bn->getOperand(1), bn->getOperand(2),
        stats.getRunningMean(), stats.getRunningVar(), bn->getAttrOfType<FloatAttr>("epsilon"));
    normalized->setDiscardableAttrs(bn->getDiscardableAttrDictionary());
    if (isa<BatchNormReluOp>(bn)) {
      normalized = b.create<ReluOp>(bn->getLoc(), normalized->getResult(0));
      normalized->setDiscardableAttrs(bn->getDiscardableAttrDictionary());
    }
    bn->getResult(0).replaceAllUsesWith(normalized->getResult(0));
  }
}

} // namespace

/// A training step's arguments and results cross into the runtime's
/// buffers, which hold f32 and i64 (parameters, state, data, the loss):
/// mixed precision casts inside the step and keeps those f32.
static LogicalResult checkStepBoundaryType(func::FuncOp step, Type type, const std::string &name) {
  Type element = getElementTypeOrSelf(type);
  if (element.isBF16() || element.isF16())
    return step.emitError("the training step's '")
           << name << "' is " << type
           << ": parameters, optimizer state, data and the loss stay f32 (or i64); mixed "
              "precision casts inside the step (het-compile --precision bf16, het-autocast)";
  return success();
}

FailureOr<std::string> mlir::het::describeStep(func::FuncOp step) {
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (failed(checkStepBoundaryType(step, step.getArgumentTypes()[i], argumentName(step, i))))
      return failure();
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (failed(checkStepBoundaryType(step, step.getResultTypes()[i], resultName(step, i))))
      return failure();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "step " << step.getName() << ' ' << step.getNumArguments() << ' '
     << step.getNumResults() << '\n';
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto type = describeType(step, step.getArgumentTypes()[i]);
    if (failed(type))
      return failure();
    os << "in " << argumentName(step, i) << ' ' << *type << ' ' << roleAndInit(step, i) << '\n';
  }
  for (unsigned i = 0; i < step.getNumResults(); ++i) {
    auto type = describeType(step, step.getResultTypes()[i]);
    if (failed(type))
      return failure();
    os << "out " << resultName(step, i) << ' ' << *type << '\n';
  }
  return text;
}

FailureOr<std::string> mlir::het::describeTensorType(Operation *where, Type type) {
  return describeType(where, type, /*low=*/true);
}

namespace {

struct BuildEntryPointsPass
    : public PassWrapper<BuildEntryPointsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BuildEntryPointsPass)

  StringRef getArgument() const override { return "het-build-entry-points"; }
  StringRef getDescription() const override {
    return "Keep the training step, add <model>_predict, and record the calling "
           "convention for libhetrt in het.model_info";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto function : module.getOps<func::FuncOp>())
      if (function.getName().ends_with("_train_step") && !function.isExternal())
        steps.push_back(function);
    if (steps.size() != 1) {
      module.emitError("het-compile needs exactly one training step (@<model>_train_step, "
                       "made by het-training-pipeline), found ")
          << steps.size();
      return signalPassFailure();
    }
    func::FuncOp step = steps.front();
    StringRef model = step.getName().drop_back(StringRef("_train_step").size());

    FailureOr<std::string> signature = describeStep(step);
    if (failed(signature))
      return signalPassFailure();
    std::string info = "het-model 1\n" + *signature;
    llvm::raw_string_ostream os(info);

    // The predict function: the forward model returning the logits its
    // cross-entropy reads, for evaluation accuracy; in eval mode, as
    // PyTorch's model.eval(): batch norms that keep running statistics
    // normalize with those.
    auto forward = module.lookupSymbol<func::FuncOp>(model);
    func::FuncOp predict;
    if (forward && isForwardModel(forward)) {
      auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
      if (ret.getOperand(0).getDefiningOp<CrossEntropyOp>()) {
        OpBuilder b(forward);
        b.setInsertionPointAfter(forward);
        predict = cast<func::FuncOp>(b.clone(*forward));
        predict.setName((model + "_predict").str());
        auto predictReturn = cast<func::ReturnOp>(predict.getBody().front().getTerminator());
        Value logits =
            predictReturn.getOperand(0).getDefiningOp<CrossEntropyOp>().getLogits();
        predictReturn->setOperands(logits);
        useRunningStatistics(predict);
        predict.setType(FunctionType::get(&getContext(), predict.getArgumentTypes(),
                                          {logits.getType()}));
        predict.removeResAttrsAttr();
        SmallVector<Operation *> ops;
        for (Operation &op : predict.getBody().front().without_terminator())
          ops.push_back(&op);
        for (Operation *op : llvm::reverse(ops))
          if (isOpTriviallyDead(op))
            op->erase();
      }
    }
    if (predict) {
      auto type = describeType(predict, predict.getResultTypes()[0]);
      if (failed(type))
        return signalPassFailure();
      os << "predict " << predict.getName() << ' ' << predict.getNumArguments() << " 1\n";
      for (unsigned i = 0; i < predict.getNumArguments(); ++i)
        os << "in " << argumentName(predict, i) << '\n';
      os << "out logits " << *type << '\n';
    }

    for (auto function : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (function != step && function != predict)
        function.erase();
    // Everything the het argument attributes said is in the info now; they
    // only apply to tensors, and the functions are about to take memrefs.
    // (All at once: setting them one by one rebuilds the whole array each
    // time, quadratic in a deep model's thousands of arguments.)
    for (func::FuncOp function : {step, predict}) {
      if (!function)
        continue;
      function.removeArgAttrsAttr();
      function.removeResAttrsAttr();
    }
    module->setAttr("hetrt.model_info", StringAttr::get(&getContext(), info));
    module->setAttr("hetrt.step", FlatSymbolRefAttr::get(step));
    if (predict)
      module->setAttr("hetrt.predict", FlatSymbolRefAttr::get(predict));
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createBuildEntryPointsPass() {
  return std::make_unique<BuildEntryPointsPass>();
}

namespace mlir::het {
void registerBuildEntryPointsPass() { PassRegistration<BuildEntryPointsPass>(); }
} // namespace mlir::het
