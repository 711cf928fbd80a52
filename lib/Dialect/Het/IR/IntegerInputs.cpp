//===- IntegerInputs.cpp - what an integer argument holds ------------------===//

#include "het/Dialect/Het/IR/IntegerInputs.h"

#include "het/Dialect/Het/IR/HetOps.h"

using namespace mlir;
using namespace mlir::het;

IntegerInput mlir::het::integerInput(Value argument) {
  // Breadth first, so an op reading the argument itself decides before one
  // reading a reshape of it.
  SmallVector<Value> values{argument};
  for (size_t next = 0; next < values.size(); ++next)
    for (Operation *user : values[next].getUsers()) {
      if (auto loss = dyn_cast<CrossEntropyOp>(user))
        return {IntegerInput::Kind::Label,
                cast<RankedTensorType>(loss.getLogits().getType()).getShape().back()};
      if (auto lookup = dyn_cast<EmbeddingOp>(user))
        return {IntegerInput::Kind::TokenId,
                cast<RankedTensorType>(lookup.getTable().getType()).getShape().front()};
      if (isa<ReshapeOp>(user))
        values.push_back(user->getResult(0));
    }
  return {};
}
