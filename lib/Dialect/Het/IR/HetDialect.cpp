//===- HetDialect.cpp - dialect registration and attribute checks ---------===//
//
// Registers ops and attributes, and verifies the dialect's discardable
// attributes (`het.layer`, `het.param`) wherever they appear.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

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
  return op->emitError() << "unknown het attribute '" << attr.getName().getValue() << "'";
}

LogicalResult HetDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  if (attr.getName() != getParamAttrName())
    return op->emitError() << "unknown het argument attribute '"
                           << attr.getName().getValue() << "' on argument #" << argIndex;
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << getParamAttrName()
                           << "' is a unit attribute (no value), got "
                           << attr.getValue() << " on argument #" << argIndex;
  Region &region = op->getRegion(regionIndex);
  if (region.empty())
    return success(); // a declaration: nothing to check the type against
  Type type = region.getArgument(argIndex).getType();
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !isa<FloatType>(tensor.getElementType()))
    return op->emitError() << "'" << getParamAttrName()
                           << "' argument #" << argIndex
                           << " must be a ranked float tensor, got " << type;
  return success();
}

LogicalResult
DeviceKindAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       DeviceVendor vendor, StringRef arch) {
  if (arch.empty())
    return emitError() << "device kind '" << stringifyDeviceVendor(vendor)
                       << "' needs a non-empty architecture name";
  return success();
}
