//===- HetDialect.cpp - dialect registration and attribute checks ---------===//
//
// Registers ops and attributes, and verifies the dialect's discardable
// attributes (`het.layer`, `het.param`, `het.name`, `het.state`) wherever they
// appear.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::het;

#include "het/Dialect/Het/IR/HetDialect.cpp.inc"
#include "het/Dialect/Het/IR/HetEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "het/Dialect/Het/IR/HetAttrs.cpp.inc"

void HetDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "het/Dialect/Het/IR/HetOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "het/Dialect/Het/IR/HetAttrs.cpp.inc"
      >();
}

LogicalResult HetDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() == getLayerAttrName()) {
    auto layer = dyn_cast<IntegerAttr>(attr.getValue());
    if (!layer || !layer.getType().isSignlessInteger(64))
      return op->emitError() << "'" << getLayerAttrName()
                             << "' must be a 64-bit integer layer index, got "
                             << attr.getValue();
    if (layer.getInt() < 0)
      return op->emitError() << "'" << getLayerAttrName()
                             << "' must be non-negative, got "
                             << layer.getInt();
    return success();
  }
  if (attr.getName() == getParamAttrName())
    return op->emitError() << "'" << getParamAttrName()
                           << "' marks function arguments, not operations";
  if (attr.getName() == getBackwardAttrName() || attr.getName() == getRecomputedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' is a unit attribute, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kF32BoundaryAttrName) {
    if (!isa<CastOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kF32BoundaryAttrName
                             << "' is a unit attribute of het.cast, got " << attr.getValue()
                             << " on " << op->getName();
    return success();
  }
  if (attr.getName() == kModelPrecisionAttrName) {
    auto format = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !format ||
        !llvm::is_contained(ArrayRef<StringRef>{"fp32", "bf16", "fp16"}, format.getValue()))
      return op->emitError() << "'" << kModelPrecisionAttrName
                             << "' is \"fp32\", \"bf16\" or \"fp16\" on a func.func, got "
                             << attr.getValue() << " on " << op->getName();
    return success();
  }
  if (attr.getName() == kBuiltMemberAttrName) {
    if (!isa<StageOp>(op) || !isa<IntegerAttr>(attr.getValue()))
      return op->emitError() << "'" << kBuiltMemberAttrName
                             << "' is an integer on het.stage, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == kReplicaExpertsAttrName) {
    auto counts = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<StageOp>(op) || !counts ||
        llvm::any_of(counts.asArrayRef(), [](int64_t n) { return n < 1; }))
      return op->emitError() << "'" << kReplicaExpertsAttrName
                             << "' is an array of positive counts on het.stage, got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == kBuiltFormatAttrName) {
    if (!isa<StageOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kBuiltFormatAttrName
                             << "' is a string on het.stage, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == getArgNamesAttrName() || attr.getName() == getResultNamesAttrName() ||
      attr.getName() == getScheduleAttrName() || attr.getName() == kShardedStateAttrName ||
      attr.getName() == kReplicaFormatsAttrName) {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!names || !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be an array of strings, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == getMicroBatchesAttrName()) {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!count || count.getInt() < 1)
      return op->emitError() << "'" << getMicroBatchesAttrName()
                             << "' must be a positive integer, got " << attr.getValue();
    return success();
  }
  if (attr.getName() == getKernelLibraryAttrName()) {
    auto library = dyn_cast<StringAttr>(attr.getValue());
    if (!library || !llvm::is_contained(ArrayRef<StringRef>{"dnnl", "reference", "mlir", "cudnn"},
                                        library.getValue()))
      return op->emitError() << "'" << getKernelLibraryAttrName()
                             << "' must be \"dnnl\", \"reference\", \"mlir\" or \"cudnn\", got "
                             << attr.getValue();
    return success();
  }
  if (attr.getName() == getGemmEnginesAttrName()) {
    auto bits = dyn_cast<IntegerAttr>(attr.getValue());
    int64_t products = isa<LinearOp>(op) ? 1 : isa<LinearGradOp>(op) ? 2 : 0;
    if (!products)
      return op->emitError() << "'" << getGemmEnginesAttrName()
                             << "' belongs on het.linear and het.linear_grad";
    if (!bits || !bits.getType().isSignlessInteger(64) || bits.getInt() < 0 ||
        bits.getInt() >= (int64_t(1) << products))
      return op->emitError() << "'" << getGemmEnginesAttrName() << "' must be a 64-bit integer "
                             << "with a bit for each of the op's " << products
                             << " matrix products, got " << attr.getValue();
    // oneDNN fuses a layer's activation into its forward product; OpenBLAS
    // computes the product alone.
    auto linear = dyn_cast<LinearOp>(op);
    if (linear && linear.getActivation() != Activation::None && (bits.getInt() & 1))
      return op->emitError() << "'" << getGemmEnginesAttrName()
                             << "' puts the forward product on OpenBLAS, which cannot apply the "
                                "layer's fused activation";
    return success();
  }
  if (attr.getName() == "het.contraction_tiling") {
    // het-tile-contractions reads it (and names a tiling it cannot read).
    if (op->getName().getStringRef() != "linalg.generic" || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'het.contraction_tiling' is a string on a linalg.generic "
                                "contraction, got "
                             << attr.getValue() << " on " << op->getName();
    return success();
  }
  return op->emitError() << "unknown het attribute '" << attr.getName().getValue() << "'";
}

/// `het.name` must be a non-empty string; shared by arguments and results.
static LogicalResult verifyNameAttribute(Operation *op, NamedAttribute attr,
                                         StringRef what, unsigned index) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << HetDialect::getNameAttrName()
                           << "' must be a non-empty string, got "
                           << attr.getValue() << " on " << what << " #" << index;
  return success();
}

LogicalResult HetDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  if (attr.getName() == getNameAttrName())
    return verifyNameAttribute(op, attr, "argument", argIndex);
  if (attr.getName() == kExpertParallelAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kExpertParallelAttrName
                             << "' names a stage (a string), got " << attr.getValue()
                             << " on argument #" << argIndex;
    return success();
  }
  if (attr.getName() != getParamAttrName() && attr.getName() != getStateAttrName())
    return op->emitError() << "unknown het argument attribute '"
                           << attr.getName().getValue() << "' on argument #" << argIndex;
  StringRef attrName = attr.getName().getValue();
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << attrName
                           << "' is a unit attribute (no value), got "
                           << attr.getValue() << " on argument #" << argIndex;
  Region &region = op->getRegion(regionIndex);
  if (region.empty())
    return success(); // a declaration: nothing to check the type against
  Type type = region.getArgument(argIndex).getType();
  auto tensor = dyn_cast<RankedTensorType>(type);
  // Optimizer state includes Adam's integer step counter.
  bool typeOk = tensor && (isa<FloatType>(tensor.getElementType()) ||
                           (attr.getName() == getStateAttrName() &&
                            tensor.getElementType().isInteger(64)));
  if (!typeOk)
    return op->emitError() << "'" << attrName << "' argument #" << argIndex
                           << " must be a ranked float tensor, got " << type;
  return success();
}

std::string mlir::het::argumentName(FunctionOpInterface function, unsigned index) {
  if (auto name = function.getArgAttrOfType<StringAttr>(index, HetDialect::getNameAttrName()))
    return name.str();
  return "arg" + std::to_string(index);
}

std::string mlir::het::resultName(FunctionOpInterface function, unsigned index) {
  if (auto name = function.getResultAttrOfType<StringAttr>(index, HetDialect::getNameAttrName()))
    return name.str();
  return "result" + std::to_string(index);
}

bool mlir::het::startsAtOne(Value argument) {
  for (OpOperand &use : argument.getUses()) {
    Operation *user = use.getOwner();
    if (isa<BatchNormOp, BatchNormReluOp, BatchNormInferenceOp, LayerNormOp, RMSNormOp>(user) &&
        use.getOperandNumber() == 1)
      return true;
    if (auto stats = dyn_cast<BatchNormRunningStatsOp>(user))
      if (use.get() == stats.getRunningVar())
        return true;
    // The loss scale's ratio to init_scale (het-autodiff's loss-scale).
    if (auto update = dyn_cast<LossScaleUpdateOp>(user))
      if (use.get() == update.getRatio())
        return true;
  }
  return false;
}

std::string mlir::het::whyNotForwardModel(FunctionOpInterface function) {
  if (function.isExternal() || !function.getFunctionBody().hasOneBlock())
    return "must have a body of one block";
  ArrayRef<Type> results = function.getResultTypes();
  if (results.empty())
    return "must return the loss, returns nothing";
  auto loss = dyn_cast<RankedTensorType>(results[0]);
  if (!loss || loss.getRank() != 0 || !isa<FloatType>(loss.getElementType())) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "must return a 0-d float loss first, returns '" << results[0] << "'";
    return text;
  }
  for (unsigned r = 1; r < results.size(); ++r) {
    std::string name = resultName(function, r);
    bool found = false;
    for (unsigned a = 0; a < function.getNumArguments() && !found; ++a)
      if (function.getArgAttr(a, HetDialect::getStateAttrName()) &&
          argumentName(function, a) == name) {
        if (function.getArgumentTypes()[a] != results[r])
          return "result " + std::to_string(r) + " ('" + name +
                 "') has another type than the het.state argument of that name";
        found = true;
      }
    if (!found)
      return "result " + std::to_string(r) + " ('" + name +
             "') is neither the loss nor named like a het.state argument (a forward model "
             "returns the loss, then the new values of the state it updates)";
  }
  return "";
}

LogicalResult HetDialect::verifyRegionResultAttribute(Operation *op,
                                                      unsigned regionIndex,
                                                      unsigned resultIndex,
                                                      NamedAttribute attr) {
  (void)regionIndex;
  if (attr.getName() == getNameAttrName())
    return verifyNameAttribute(op, attr, "result", resultIndex);
  return op->emitError() << "unknown het result attribute '"
                         << attr.getName().getValue() << "' on result #" << resultIndex;
}

LogicalResult
DeviceKindAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       DeviceVendor vendor, StringRef arch) {
  if (arch.empty())
    return emitError() << "device kind '" << stringifyDeviceVendor(vendor)
                       << "' needs a non-empty architecture name";
  return success();
}

LogicalResult
ReplicaGroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         SymbolRefAttr group, int64_t replicas, int64_t samples) {
  if (!group)
    return emitError() << "a replica group needs a device group";
  if (replicas < 1)
    return emitError() << "replica group " << group << " needs at least one replica, got "
                       << replicas;
  if (samples < 0)
    return emitError() << "replica group " << group
                       << " has a negative share of the micro-batch (" << samples << ")";
  return success();
}
