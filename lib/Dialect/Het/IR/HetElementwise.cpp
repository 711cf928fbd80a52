//===- HetElementwise.cpp - the fused element-wise op ----------------------===//
//
// `het.elementwise` holds a scalar body that `het-fuse` builds from a chain
// of element-wise ops. The verifier keeps the body to what every backend can
// run per element: scalar `arith`/`math` ops without regions.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

using namespace mlir;
using namespace mlir::het;

void ElementwiseOp::build(
    OpBuilder &builder, OperationState &state, Type resultType, ValueRange inputs,
    function_ref<Value(OpBuilder &, Location, ValueRange)> bodyBuilder) {
  state.addOperands(inputs);
  state.addTypes(resultType);
  Block *body = new Block();
  state.addRegion()->push_back(body);
  for (Value input : inputs)
    body->addArgument(cast<RankedTensorType>(input.getType()).getElementType(),
                      state.location);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(body);
  Value element = bodyBuilder(builder, state.location, body->getArguments());
  builder.create<YieldOp>(state.location, ValueRange{element});
}

LogicalResult ElementwiseOp::verify() {
  auto resultType = cast<RankedTensorType>(getResult().getType());
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ") << body.getNumArguments()
                                    << " arguments but the op has "
                                    << getInputs().size() << " inputs";
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (body.getArgument(index).getType() != type.getElementType())
      return emitOpError("body argument #")
             << index << " must be the element type " << type.getElementType()
             << " of input #" << index << ", got "
             << body.getArgument(index).getType();
    SmallVector<Type> broadcast;
    if (type.getRank() > resultType.getRank() ||
        failed(inferBroadcastType(std::nullopt, type, resultType, broadcast)) ||
        broadcast.front() != resultType)
      return emitOpError("input #") << index << " of type " << type
                                    << " does not broadcast to the result type "
                                    << resultType;
  }
  for (Operation &op : body.without_terminator()) {
    StringRef dialect = op.getDialect() ? op.getDialect()->getNamespace() : "";
    if ((dialect != "arith" && dialect != "math") || op.getNumRegions() != 0)
      return op.emitOpError("is not allowed in a het.elementwise body (only "
                            "scalar arith and math ops are)");
    for (Type type : op.getResultTypes())
      if (isa<ShapedType>(type))
        return op.emitOpError("must compute on scalars inside het.elementwise, got ")
               << type;
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != resultType.getElementType())
    return emitOpError("body must end in het.yield of one ")
           << resultType.getElementType() << " value";
  return success();
}
