//===- ShapeRespecialization.cpp - recompute result types after new inputs ===//

#include "het/Dialect/Het/Transforms/ShapeRespecialization.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::het;

FailureOr<SmallVector<ReshapeGroup>> mlir::het::reshapeGroups(ArrayRef<int64_t> in,
                                                              ArrayRef<int64_t> out) {
  SmallVector<ReshapeGroup> groups;
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    size_t i0 = i, o0 = o;
    int64_t pi = i < in.size() ? in[i++] : 1, po = o < out.size() ? out[o++] : 1;
    while (pi != po) {
      if (pi < po && i < in.size())
        pi *= in[i++];
      else if (po < pi && o < out.size())
        po *= out[o++];
      else
        return failure();
    }
    while (i < in.size() && in[i] == 1 && (o >= out.size() || out[o] != 1))
      ++i;
    while (o < out.size() && out[o] == 1 && (i >= in.size() || in[i] != 1))
      ++o;
    groups.push_back({i0, i, o0, o});
  }
  return groups;
}

FailureOr<RankedTensorType> mlir::het::respecializeReshape(RankedTensorType oldInput,
                                                           RankedTensorType oldOutput,
                                                           RankedTensorType newInput) {
  if (oldInput == newInput)
    return oldOutput;
  if (oldInput.getRank() != newInput.getRank() || !oldInput.hasStaticShape() ||
      !oldOutput.hasStaticShape() || !newInput.hasStaticShape())
    return failure();
  ArrayRef<int64_t> in = oldInput.getShape(), out = oldOutput.getShape(),
                    now = newInput.getShape();
  FailureOr<SmallVector<ReshapeGroup>> groups = reshapeGroups(in, out);
  if (failed(groups))
    return failure();
  SmallVector<int64_t> result(out.begin(), out.end());
  for (const ReshapeGroup &g : *groups) {
    int64_t before = 1, after = 1;
    for (size_t k = g.inBegin; k < g.inEnd; ++k) {
      before *= in[k];
      after *= now[k];
    }
    if (after == before)
      continue;
    // The group changed: its outermost output dimension absorbs the change.
    size_t first = g.outBegin;
    while (first < g.outEnd && out[first] == 1)
      ++first;
    if (first == g.outEnd)
      return failure();
    int64_t rest = before / out[first];
    if (after % rest != 0)
      return failure();
    result[first] = after / rest;
  }
  return RankedTensorType::get(result, oldOutput.getElementType());
}

namespace {

/// `operand`'s dimension that result dimension `k` of a rank-`rank` result
/// aligns with under NumPy broadcasting, or -1 (a leading dimension).
int64_t aligned(int64_t k, int64_t rank, int64_t operandRank) {
  int64_t d = k - (rank - operandRank);
  return d >= 0 ? d : -1;
}

FailureOr<SmallVector<Type>> newResultTypes(Operation *op,
                                            const llvm::DenseMap<Value, Type> &old,
                                            const RespecializeOptions &options) {
  auto oldType = [&](Value v) {
    auto it = old.find(v);
    return cast<RankedTensorType>(it != old.end() ? it->second : v.getType());
  };
  auto result0 = [&]() { return cast<RankedTensorType>(op->getResult(0).getType()); };

  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    auto type = respecializeReshape(oldType(reshape.getInput()), result0(),
                                    cast<RankedTensorType>(reshape.getInput().getType()));
    if (failed(type))
      return op->emitOpError("cannot carry its input's new shape ")
             << reshape.getInput().getType() << " (was " << oldType(reshape.getInput())
             << ") over to its result " << result0();
    return SmallVector<Type>{*type};
  }
  if (isa<BroadcastToOp>(op)) {
    // Result dimensions that came from the input follow it; stretched ones
    // keep their size.
    RankedTensorType before = oldType(op->getOperand(0)), out = result0();
    auto now = cast<RankedTensorType>(op->getOperand(0).getType());
    SmallVector<int64_t> shape(out.getShape());
    for (int64_t k = 0; k < out.getRank(); ++k) {
      int64_t d = aligned(k, out.getRank(), before.getRank());
      if (d >= 0 && before.getDimSize(d) == out.getDimSize(k))
        shape[k] = now.getDimSize(d);
      else if (d < 0 && k == 0 && options.batch && out.getDimSize(0) == options.batch->first)
        shape[k] = options.batch->second; // a batch dimension the broadcast adds
    }
    return SmallVector<Type>{RankedTensorType::get(shape, out.getElementType())};
  }
  if (isa<SumToShapeOp>(op)) {
    // Result dimensions that were not summed follow the input.
    RankedTensorType before = oldType(op->getOperand(0)), out = result0();
    auto now = cast<RankedTensorType>(op->getOperand(0).getType());
    SmallVector<int64_t> shape(out.getShape());
    for (int64_t d = 0; d < out.getRank(); ++d) {
      int64_t k = d + (before.getRank() - out.getRank());
      if (before.getDimSize(k) == out.getDimSize(d))
        shape[d] = now.getDimSize(k);
    }
    return SmallVector<Type>{RankedTensorType::get(shape, out.getElementType())};
  }
  if (auto shapes = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> types;
    if (failed(shapes.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                       op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                       op->getRegions(), types)))
      return failure(); // the rule emitted the reason
    return types;
  }
  if (isa<ElementwiseOp>(op)) {
    SmallVector<int64_t> shape;
    for (Value input : op->getOperands()) {
      auto type = cast<RankedTensorType>(input.getType());
      SmallVector<Type> broadcast;
      if (shape.empty()) {
        shape.assign(type.getShape().begin(), type.getShape().end());
        continue;
      }
      if (failed(inferBroadcastType(op->getLoc(),
                                    RankedTensorType::get(shape, type.getElementType()), type,
                                    broadcast)))
        return failure();
      auto b = cast<RankedTensorType>(broadcast.front()).getShape();
      shape.assign(b.begin(), b.end());
    }
    return SmallVector<Type>{RankedTensorType::get(shape, result0().getElementType())};
  }
  if (auto dispatch = dyn_cast<MoEDispatchOp>(op)) {
    // Experts and width stay; the capacity follows the new token count.
    auto input = cast<RankedTensorType>(dispatch.getInput().getType());
    auto indices = cast<RankedTensorType>(dispatch.getIndices().getType());
    RankedTensorType out = result0();
    std::optional<double> factor;
    if (auto attr = dispatch.getCapacityFactorAttr())
      factor = attr.getValueAsDouble();
    int64_t rows = MoEDispatchOp::capacityFor(input.getDimSize(0), indices.getDimSize(1),
                                              out.getDimSize(0), factor);
    return SmallVector<Type>{RankedTensorType::get(
        {out.getDimSize(0), rows, input.getDimSize(1)}, out.getElementType())};
  }
  if (isa<MoEExpertFractionOp>(op))
    return SmallVector<Type>{result0()}; // one share per expert, whatever the token count
  if (isa<AllGatherOp, ReduceScatterOp>(op)) {
    int64_t axis = isa<AllGatherOp>(op) ? cast<AllGatherOp>(op).getAxis()
                                        : cast<ReduceScatterOp>(op).getAxis();
    RankedTensorType before = oldType(op->getOperand(0)), out = result0();
    auto now = cast<RankedTensorType>(op->getOperand(0).getType());
    SmallVector<int64_t> shape(now.getShape());
    shape[axis] = now.getDimSize(axis) * out.getDimSize(axis) / before.getDimSize(axis);
    return SmallVector<Type>{RankedTensorType::get(shape, out.getElementType())};
  }
  // Ops whose results have the type of an operand (same-type traits,
  // all_reduce, tensor_parallel_copy): that operand's new type.
  SmallVector<Type> types;
  for (Value result : op->getResults()) {
    Type found;
    for (Value operand : op->getOperands())
      if (oldType(operand) == result.getType()) {
        found = operand.getType();
        break;
      }
    if (!found)
      return op->emitOpError("has no rule for how its result shape follows its operands' "
                             "new shapes");
    types.push_back(found);
  }
  return types;
}

} // namespace

LogicalResult mlir::het::respecializeShapes(func::FuncOp function,
                                            const RespecializeOptions &options,
                                            ArrayRef<Type> oldArgumentTypes) {
  llvm::DenseMap<Value, Type> old;
  for (auto [arg, type] : llvm::zip(function.getArguments(), oldArgumentTypes))
    if (arg.getType() != type)
      old[arg] = type;
  Block &body = function.getBody().front();
  for (Operation &op : body) {
    if (options.beforeOp)
      options.beforeOp(&op);
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      function.setType(FunctionType::get(function.getContext(), function.getArgumentTypes(),
                                         ret.getOperandTypes()));
      continue;
    }
    bool changed = llvm::any_of(op.getOperands(), [&](Value v) { return old.count(v); });
    // A broadcast may add the batch dimension to a value without one.
    if (!changed && !(options.batch && isa<BroadcastToOp>(op)))
      continue;
    FailureOr<SmallVector<Type>> types = newResultTypes(&op, old, options);
    if (failed(types))
      return failure();
    for (auto [result, type] : llvm::zip(op.getResults(), *types))
      if (result.getType() != type) {
        old[result] = result.getType();
        result.setType(type);
      }
    if (failed(verify(&op)))
      return failure();
  }
  return success();
}
