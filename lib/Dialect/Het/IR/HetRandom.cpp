//===- HetRandom.cpp - verifiers of the random ops -------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

using namespace mlir;
using namespace mlir::het;

LogicalResult DropoutOp::verify() {
  double p = getP().convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return emitOpError("p must be in [0, 1), got ") << p;
  if (getStream() < 0 || getStream() > 0xffffffffLL)
    return emitOpError("stream must be a 32-bit unsigned number, got ") << getStream();
  return success();
}
