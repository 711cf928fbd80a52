//===- HetMoE.cpp - shape rules and gradients of the mixture-of-experts ops ===//
//
// The rules of HetMoEOps.td in one place. dispatch and combine are each
// other's transposes for a fixed routing, so each one's input gradient is
// the other op, and both weight gradients are the same per-choice dot
// product (het.moe_slot_grad).
//
//===----------------------------------------------------------------------===//

#include "ShapeRules.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::shapes;

namespace {

/// `indices` is [T, k] with T compatible with `tokens` (kDynamic: unchecked).
LogicalResult checkChoices(std::optional<Location> loc, StringRef op, Value indices,
                           int64_t tokens) {
  ArrayRef<int64_t> shape = shapeOf(indices);
  if (shape.size() != 2)
    return emitOptionalError(loc, op, ": indices must be 2-D [T, k], got ", shapeString(shape));
  if (!compatible(shape[0], tokens))
    return emitOptionalError(loc, op, ": indices have ", shape[0], " tokens, the data ",
                             tokens);
  return success();
}

/// Optional per-choice weights have the indices' shape and the data's format.
LogicalResult checkWeights(std::optional<Location> loc, StringRef op, Value weights,
                           Value indices, Type element) {
  if (!weights)
    return success();
  if (!compatible(shapeOf(weights), shapeOf(indices)))
    return emitOptionalError(loc, op, ": weights must have the indices' shape ",
                             shapeString(shapeOf(indices)), ", got ",
                             shapeString(shapeOf(weights)));
  if (elementOf(weights) != element)
    return emitOptionalError(loc, op, ": weights must have the data's element type ", element,
                             ", got ", elementOf(weights));
  return success();
}

/// The expert buffer [E, C, D] with D compatible with `width`.
LogicalResult checkExpertBuffer(std::optional<Location> loc, StringRef op, StringRef name,
                                Value buffer, int64_t width) {
  ArrayRef<int64_t> shape = shapeOf(buffer);
  if (shape.size() != 3)
    return emitOptionalError(loc, op, ": ", name, " must be 3-D [E, C, D], got ",
                             shapeString(shape));
  if (!compatible(shape[2], width))
    return emitOptionalError(loc, op, ": ", name, " rows have ", shape[2],
                             " elements, the tokens ", width);
  for (int d = 0; d < 2; ++d)
    if (shape[d] == 0)
      return emitOptionalError(loc, op, ": ", name, " needs at least one ",
                               d == 0 ? "expert" : "row per expert (capacity)", ", got ",
                               shapeString(shape));
  return success();
}

/// The routing of a grouped product: the choices `[T, k]` that filled
/// its `experts` experts' rows, or (after het.moe_to_experts) `[E]`
/// counts of filled rows.
LogicalResult checkRouting(std::optional<Location> loc, StringRef op, Value routing,
                           int64_t experts) {
  ArrayRef<int64_t> shape = shapeOf(routing);
  if (shape.size() == 1) {
    if (!compatible(shape[0], experts))
      return emitOptionalError(loc, op, ": counts of filled rows must be [E] = [", experts,
                               "], got ", shapeString(shape));
    return success();
  }
  return checkChoices(loc, op, routing, kDynamic);
}

} // namespace

//===----------------------------------------------------------------------===//
// Shape rules
//===----------------------------------------------------------------------===//

LogicalResult MoERouterOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> logits = shapeOf(adaptor.getLogits());
  if (logits.size() != 2)
    return emitOptionalError(loc, "moe_router: logits must be 2-D [T, E], got ",
                             shapeString(logits));
  int64_t k = adaptor.getTopK();
  if (logits[1] == kDynamic)
    return emitOptionalError(loc, "moe_router: the number of experts must be static, got ",
                             shapeString(logits));
  if (k < 1 || k > logits[1])
    return emitOptionalError(loc, "moe_router: top_k must be in [1, E = ", logits[1], "], got ",
                             k);
  types.push_back(withShape({logits[0], k}, elementOf(adaptor.getLogits())));
  types.push_back(withShape({logits[0], k}, IntegerType::get(context, 64)));
  return success();
}

LogicalResult MoERouterGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> logits = shapeOf(adaptor.getLogits());
  if (logits.size() != 2)
    return emitOptionalError(loc, "moe_router_grad: logits must be 2-D [T, E], got ",
                             shapeString(logits));
  if (failed(checkChoices(loc, "moe_router_grad", adaptor.getIndices(), logits[0])) ||
      failed(checkWeights(loc, "moe_router_grad", adaptor.getGradWeights(), adaptor.getIndices(),
                          elementOf(adaptor.getLogits()))))
    return failure();
  types.push_back(adaptor.getLogits().getType());
  return success();
}

int64_t MoEDispatchOp::capacityFor(int64_t tokens, int64_t topK, int64_t experts,
                                   std::optional<double> factor) {
  if (!factor)
    return tokens;
  // In double until it is known to fit (a huge factor: every token).
  double rows = std::ceil(*factor * double(tokens) * double(topK) / double(experts));
  return std::min(tokens, static_cast<int64_t>(std::max(1.0, std::min(rows, double(tokens)))));
}

LogicalResult MoEDispatchOp::verify() {
  std::optional<Location> loc = getLoc();
  ArrayRef<int64_t> input = shapeOf(getInput());
  if (input.size() != 2)
    return emitOpError("input must be 2-D [T, D], got ") << shapeString(input);
  if (failed(checkChoices(loc, "moe_dispatch", getIndices(), input[0])) ||
      failed(checkWeights(loc, "moe_dispatch", getWeights(), getIndices(), elementOf(getInput()))) ||
      failed(checkExpertBuffer(loc, "moe_dispatch", "the result", getResult(), input[1])))
    return failure();
  if (elementOf(getResult()) != elementOf(getInput()))
    return emitOpError("result must have the input's element type ") << elementOf(getInput());
  std::optional<double> factor;
  if (auto attr = getCapacityFactorAttr()) {
    factor = attr.getValueAsDouble();
    if (!(*factor > 0))
      return emitOpError("capacity_factor must be positive, got ") << *factor;
  }
  ArrayRef<int64_t> result = shapeOf(getResult()), indices = shapeOf(getIndices());
  if (input[0] != kDynamic && indices[1] != kDynamic && result[0] != kDynamic &&
      result[1] != kDynamic) {
    int64_t rows = capacityFor(input[0], indices[1], result[0], factor);
    if (result[1] != rows)
      return emitOpError("result must have ")
             << rows << " rows per expert for " << input[0] << " tokens"
             << (factor ? " at its capacity_factor" : " (no capacity_factor: every token)")
             << ", got " << result[1];
  }
  return success();
}

LogicalResult MoECombineOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> buffer = shapeOf(adaptor.getExpertOutput());
  if (buffer.size() != 3)
    return emitOptionalError(loc, "moe_combine: expert_output must be 3-D [E, C, D], got ",
                             shapeString(buffer));
  ArrayRef<int64_t> indices = shapeOf(adaptor.getIndices());
  if (failed(checkChoices(loc, "moe_combine", adaptor.getIndices(), kDynamic)) ||
      failed(checkExpertBuffer(loc, "moe_combine", "expert_output", adaptor.getExpertOutput(),
                               kDynamic)) ||
      failed(checkWeights(loc, "moe_combine", adaptor.getWeights(), adaptor.getIndices(),
                          elementOf(adaptor.getExpertOutput()))))
    return failure();
  types.push_back(withShape({indices[0], buffer[2]}, elementOf(adaptor.getExpertOutput())));
  return success();
}

LogicalResult MoESlotGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> tokens = shapeOf(adaptor.getTokens());
  if (tokens.size() != 2)
    return emitOptionalError(loc, "moe_slot_grad: tokens must be 2-D [T, D], got ",
                             shapeString(tokens));
  if (failed(checkChoices(loc, "moe_slot_grad", adaptor.getIndices(), tokens[0])) ||
      failed(checkExpertBuffer(loc, "moe_slot_grad", "expert_rows", adaptor.getExpertRows(),
                               tokens[1])))
    return failure();
  if (elementOf(adaptor.getExpertRows()) != elementOf(adaptor.getTokens()))
    return emitOptionalError(loc, "moe_slot_grad: tokens and expert_rows must have the same "
                                  "element type");
  types.push_back(withShape(shapeOf(adaptor.getIndices()), elementOf(adaptor.getTokens())));
  return success();
}

LogicalResult MoEExpertMatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> rows = shapeOf(adaptor.getRows()), weight = shapeOf(adaptor.getWeight());
  if (rows.size() != 3 || weight.size() != 3)
    return emitOptionalError(loc, "moe_expert_matmul: rows [E, C, K] and weight [E, K, N] (or "
                                  "[E, N, K] with transpose_rhs) must be 3-D, got ",
                             shapeString(rows), " and ", shapeString(weight));
  bool transposed = adaptor.getTransposeRhs();
  int64_t k = transposed ? weight[2] : weight[1], n = transposed ? weight[1] : weight[2];
  if (!compatible(rows[0], weight[0]) || !compatible(rows[2], k))
    return emitOptionalError(loc, "moe_expert_matmul: rows ", shapeString(rows),
                             " do not contract with weight ", shapeString(weight),
                             transposed ? " (transposed)" : "");
  if (elementOf(adaptor.getRows()) != elementOf(adaptor.getWeight()))
    return emitOptionalError(loc, "moe_expert_matmul: rows and weight must have the same "
                                  "element type");
  if (failed(checkRouting(loc, "moe_expert_matmul", adaptor.getIndices(), rows[0])))
    return failure();
  types.push_back(withShape({rows[0], rows[1], n}, elementOf(adaptor.getRows())));
  return success();
}

LogicalResult MoEExpertWeightGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                      Adaptor adaptor,
                                                      SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> rows = shapeOf(adaptor.getRows()), dy = shapeOf(adaptor.getGradOutput());
  if (rows.size() != 3 || dy.size() != 3 || !compatible(rows[0], dy[0]) ||
      !compatible(rows[1], dy[1]))
    return emitOptionalError(loc, "moe_expert_weight_grad: rows [E, C, K] and grad_output "
                                  "[E, C, N] must agree in E and C, got ",
                             shapeString(rows), " and ", shapeString(dy));
  if (failed(checkRouting(loc, "moe_expert_weight_grad", adaptor.getIndices(), rows[0])))
    return failure();
  if (elementOf(adaptor.getRows()) != elementOf(adaptor.getGradOutput()))
    return emitOptionalError(loc, "moe_expert_weight_grad: rows and grad_output must have the "
                                  "same element type");
  Shape result = adaptor.getTransposeResult() ? Shape{rows[0], dy[2], rows[2]}
                                              : Shape{rows[0], rows[2], dy[2]};
  types.push_back(withShape(result, elementOf(adaptor.getRows())));
  return success();
}

LogicalResult MoEExpertFractionOp::verify() {
  if (failed(checkChoices(getLoc(), "moe_expert_fraction", getIndices(), kDynamic)))
    return failure();
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (result.size() != 1 || result[0] == 0)
    return emitOpError("result must be 1-D [E] with at least one expert, got ")
           << shapeString(result);
  return success();
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

LogicalResult MoERouterOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  // Only the weights carry a gradient; the choice (indices) has none.
  if (!dys[0]) {
    dxs.push_back(Value());
    return success();
  }
  dxs.push_back(b.create<MoERouterGradOp>(getLoc(), dys[0], getLogits(), getIndices(),
                                          getNormalizeAttr()));
  return success();
}

LogicalResult MoEDispatchOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                            SmallVectorImpl<Value> &dxs) {
  Value dy = dys[0];
  dxs.push_back(b.create<MoECombineOp>(getLoc(), dy, getIndices(), getWeights()));
  dxs.push_back(Value()); // expert choices are integers
  if (getWeights())
    dxs.push_back(b.create<MoESlotGradOp>(getLoc(), getInput(), dy, getIndices()));
  return success();
}

LogicalResult MoECombineOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  Value dy = dys[0];
  // The dispatch of the same routing that filled the experts' rows sized
  // them (same experts and capacity; the experts may change the width and
  // the format); the gradient's dispatch takes its capacity rule.
  ArrayRef<int64_t> buffer = shapeOf(getExpertOutput());
  FloatAttr factor;
  bool found = false;
  for (Operation *user : getIndices().getUsers())
    if (auto dispatch = dyn_cast<MoEDispatchOp>(user))
      if (!dispatch.getGradient() && shapeOf(dispatch.getResult()).take_front(2) ==
                                         buffer.take_front(2)) {
        factor = dispatch.getCapacityFactorAttr();
        found = true;
      }
  int64_t tokens = shapeOf(getIndices())[0];
  if (!found && buffer[1] != tokens)
    return emitOpError("combines ")
           << buffer[1] << " rows per expert for " << tokens
           << " tokens, but no het.moe_dispatch of the same routing says how they were sized; "
              "its gradient cannot be built";
  dxs.push_back(b.create<MoEDispatchOp>(getLoc(), getExpertOutput().getType(), dy, getIndices(),
                                        getWeights(), factor, /*gradient=*/b.getUnitAttr()));
  dxs.push_back(Value()); // expert choices are integers
  if (getWeights())
    dxs.push_back(b.create<MoESlotGradOp>(getLoc(), dy, getExpertOutput(), getIndices()));
  return success();
}

LogicalResult MoEExpertMatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                                SmallVectorImpl<Value> &dxs) {
  Value dy = dys[0];
  // y = x w (w [E, K, N]): dx = dy w^T; y = x w^T (w [E, N, K]): dx = dy w.
  bool transposed = getTransposeRhs();
  dxs.push_back(b.create<MoEExpertMatmulOp>(getLoc(), dy, getWeight(), getIndices(),
                                            transposed ? UnitAttr() : b.getUnitAttr()));
  dxs.push_back(b.create<MoEExpertWeightGradOp>(getLoc(), getRows(), dy, getIndices(),
                                                transposed ? b.getUnitAttr() : UnitAttr()));
  dxs.push_back(Value()); // expert choices are integers
  return success();
}

LogicalResult MoEExpertFractionOp::buildGradients(OpBuilder &, ArrayRef<Value>,
                                                  SmallVectorImpl<Value> &dxs) {
  dxs.push_back(Value()); // counting choices has no gradient
  return success();
}
