//===- HetShapeInference.cpp - shape rules of the compute ops -------------===//
//
// One shape rule per op, used both to infer result types (so builders need
// none) and, through the InferTypeOpInterface check, to verify them. Ops whose
// result cannot be inferred (gradients that need the forward input's shape)
// verify by running the forward rule backwards. Dynamic dimensions (`?`) are
// accepted and propagate; a mismatch is only reported between known sizes.
//
//===----------------------------------------------------------------------===//

#include "ShapeRules.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::het;

using namespace mlir::het::shapes;

//===----------------------------------------------------------------------===//
// Shared rules
//===----------------------------------------------------------------------===//

LogicalResult mlir::het::inferBroadcastType(std::optional<Location> loc,
                                            Type lhsType, Type rhsType,
                                            SmallVectorImpl<Type> &types) {
  auto lhs = ranked(lhsType), rhs = ranked(rhsType);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands must have the same element type, got ",
                             lhs.getElementType(), " and ", rhs.getElementType());
  ArrayRef<int64_t> a = lhs.getShape(), b = rhs.getShape();
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      result[i] = y;
    else if (y == 1)
      result[i] = x;
    else if (x == kDynamic)
      result[i] = y;
    else if (y == kDynamic || x == y)
      result[i] = x;
    else
      return emitOptionalError(
          loc, "operands are not broadcast-compatible: ", shapeString(a),
          " and ", shapeString(b), " differ in dimension ", i,
          " of the result (", x, " vs ", y, ")");
  }
  types.push_back(withShape(result, lhs.getElementType()));
  return success();
}

/// Forward shape of a convolution (also used to check its gradients).
static FailureOr<Shape> conv2dShape(std::optional<Location> loc,
                                    ArrayRef<int64_t> input,
                                    ArrayRef<int64_t> filter,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> padding,
                                    ArrayRef<int64_t> dilation, int64_t groups) {
  if (input.size() != 4)
    return emitOptionalError(loc, "input must be 4-D [N, C, H, W], got rank ",
                             input.size());
  if (filter.size() != 4)
    return emitOptionalError(
        loc, "filter must be 4-D [O, C/groups, KH, KW], got rank ",
        filter.size());
  if (failed(checkPair(loc, "strides", strides, 1)) ||
      failed(checkPair(loc, "padding", padding, 0)) ||
      failed(checkPair(loc, "dilation", dilation, 1)))
    return failure();
  if (groups < 1)
    return emitOptionalError(loc, "'groups' must be >= 1, got ", groups);
  if (input[1] != kDynamic && input[1] % groups != 0)
    return emitOptionalError(loc, "input channels (", input[1],
                             ") must divide by groups (", groups, ")");
  if (filter[0] != kDynamic && filter[0] % groups != 0)
    return emitOptionalError(loc, "output channels (", filter[0],
                             ") must divide by groups (", groups, ")");
  if (input[1] != kDynamic && !compatible(filter[1], input[1] / groups))
    return emitOptionalError(loc, "filter has ", filter[1],
                             " input channels per group, but the input has ",
                             input[1], " channels in ", groups, " group(s)");
  Shape result = {input[0], filter[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    result[2 + i] = windowOutput(input[2 + i], filter[2 + i], strides[i],
                                 padding[i], dilation[i]);
    if (result[2 + i] != kDynamic && result[2 + i] < 1)
      return emitOptionalError(loc, "the kernel ", shapeString(filter.drop_front(2)),
                               " does not fit the padded input ",
                               shapeString(input.drop_front(2)));
  }
  return result;
}

static FailureOr<Shape> pool2dShape(std::optional<Location> loc,
                                    ArrayRef<int64_t> input,
                                    ArrayRef<int64_t> kernel,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> padding) {
  if (input.size() != 4)
    return emitOptionalError(loc, "input must be 4-D [N, C, H, W], got rank ",
                             input.size());
  if (failed(checkPair(loc, "kernel", kernel, 1)) ||
      failed(checkPair(loc, "strides", strides, 1)) ||
      failed(checkPair(loc, "padding", padding, 0)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (2 * padding[i] > kernel[i])
      return emitOptionalError(loc, "padding ", padding[i],
                               " is more than half the kernel size ", kernel[i],
                               ", so a window could hold only padding");
  Shape result = {input[0], input[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    result[2 + i] = windowOutput(input[2 + i], kernel[i], strides[i],
                                 padding[i], 1);
    if (result[2 + i] != kDynamic && result[2 + i] < 1)
      return emitOptionalError(loc, "the window ", shapeString(kernel),
                               " does not fit the padded input ",
                               shapeString(input.drop_front(2)));
  }
  return result;
}

static LogicalResult checkEpsilon(std::optional<Location> loc, double eps) {
  if (!(eps > 0.0) || !std::isfinite(eps))
    return emitOptionalError(loc, "'epsilon' must be positive and finite, got ",
                             eps);
  return success();
}

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(sameElementType(loc, "matmul operands", adaptor.getOperands())))
    return failure();
  Shape lhs(shapeOf(adaptor.getLhs())), rhs(shapeOf(adaptor.getRhs()));
  if (lhs.size() < 2 || rhs.size() < 2)
    return emitOptionalError(loc, "matmul operands must have rank >= 2, got ",
                             shapeString(lhs), " and ", shapeString(rhs));
  if (adaptor.getTransposeLhs())
    std::swap(lhs[lhs.size() - 1], lhs[lhs.size() - 2]);
  if (adaptor.getTransposeRhs())
    std::swap(rhs[rhs.size() - 1], rhs[rhs.size() - 2]);
  int64_t k1 = lhs.back(), k2 = rhs[rhs.size() - 2];
  if (!compatible(k1, k2))
    return emitOptionalError(loc, "contraction sizes differ: lhs has K = ", k1,
                             ", rhs has K = ", k2, " (after transposes)");
  ArrayRef<int64_t> lhsBatch = ArrayRef(lhs).drop_back(2);
  ArrayRef<int64_t> rhsBatch = ArrayRef(rhs).drop_back(2);
  if (!rhsBatch.empty() && !compatible(lhsBatch, rhsBatch))
    return emitOptionalError(loc, "batch dimensions differ: ",
                             shapeString(lhsBatch), " vs ",
                             shapeString(rhsBatch),
                             " (rhs may also be a plain matrix)");
  Shape result(lhsBatch);
  result.push_back(lhs[lhs.size() - 2]);
  result.push_back(rhs.back());
  types.push_back(withShape(result, elementOf(adaptor.getLhs())));
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(sameElementType(loc, "linear operands", adaptor.getOperands())))
    return failure();
  ArrayRef<int64_t> input = shapeOf(adaptor.getInput());
  ArrayRef<int64_t> weight = shapeOf(adaptor.getWeight());
  if (input.empty())
    return emitOptionalError(loc, "linear input must have rank >= 1");
  if (weight.size() != 2)
    return emitOptionalError(loc, "linear weight must be 2-D [out, in], got ",
                             shapeString(weight));
  if (!compatible(input.back(), weight[1]))
    return emitOptionalError(loc, "input features (", input.back(),
                             ") differ from the weight's in-features (",
                             weight[1], ")");
  if (adaptor.getBias() &&
      failed(expectVector(loc, "bias", adaptor.getBias(), weight[0], "out")))
    return failure();
  Shape result(input.drop_back());
  result.push_back(weight[0]);
  types.push_back(withShape(result, elementOf(adaptor.getInput())));
  return success();
}

LogicalResult LinearGradOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  if (failed(sameElementType(loc, "linear_grad operands", adaptor.getOperands())))
    return failure();
  ArrayRef<int64_t> dy = shapeOf(adaptor.getGradOutput());
  ArrayRef<int64_t> input = shapeOf(adaptor.getInput());
  ArrayRef<int64_t> weight = shapeOf(adaptor.getWeight());
  if (weight.size() != 2)
    return emitOptionalError(loc, "linear weight must be 2-D [out, in], got ",
                             shapeString(weight));
  if (dy.empty() || input.size() != dy.size() ||
      !compatible(dy.drop_back(), input.drop_back()))
    return emitOptionalError(loc, "grad_output ", shapeString(dy),
                             " and input ", shapeString(input),
                             " must agree in all but the last dimension");
  if (!compatible(dy.back(), weight[0]) || !compatible(input.back(), weight[1]))
    return emitOptionalError(loc, "weight ", shapeString(weight),
                             " does not map input features ", input.back(),
                             " to output features ", dy.back());
  Type element = elementOf(adaptor.getInput());
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getWeight().getType());
  types.push_back(withShape({weight[0]}, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (failed(sameElementType(loc, "conv2d operands", adaptor.getOperands())))
    return failure();
  FailureOr<Shape> shape = conv2dShape(
      loc, shapeOf(adaptor.getInput()), shapeOf(adaptor.getFilter()),
      adaptor.getStrides(), adaptor.getPadding(), adaptor.getDilation(),
      adaptor.getGroups());
  if (failed(shape))
    return failure();
  if (adaptor.getBias() &&
      failed(expectVector(loc, "bias", adaptor.getBias(),
                          shapeOf(adaptor.getFilter())[0], "O")))
    return failure();
  types.push_back(withShape(*shape, elementOf(adaptor.getInput())));
  return success();
}

/// Convolution gradients: the forward rule applied to the (input, filter)
/// pair, one of which is the op's result, must reproduce grad_output.
/// `role` names the result in the message ("an input", "a filter").
template <typename OpTy>
static LogicalResult verifyConv2dGrad(OpTy op, Value input, Value filter,
                                      Value result, StringRef role) {
  std::string what = (op->getName().stripDialect() + " operands and result").str();
  if (failed(sameElementType(op.getLoc(), what,
                             {op.getGradOutput(), input, filter})))
    return failure();
  FailureOr<Shape> forward =
      conv2dShape(op.getLoc(), shapeOf(input), shapeOf(filter),
                  op.getStrides(), op.getPadding(), op.getDilation(),
                  op.getGroups());
  if (failed(forward))
    return failure();
  if (!compatible(*forward, shapeOf(op.getGradOutput())))
    return op.emitOpError("grad_output ")
           << shapeString(shapeOf(op.getGradOutput()))
           << " is not the forward output " << shapeString(*forward) << " of "
           << role << " " << shapeString(shapeOf(result));
  return success();
}

LogicalResult Conv2dGradInputOp::verify() {
  return verifyConv2dGrad(*this, getGradInput(), getFilter(), getGradInput(),
                          "an input");
}

LogicalResult Conv2dGradFilterOp::verify() {
  return verifyConv2dGrad(*this, getInput(), getGradFilter(), getGradFilter(),
                          "a filter");
}

LogicalResult mlir::het::inferPool2dType(std::optional<Location> loc,
                                         Value input, ArrayRef<int64_t> kernel,
                                         ArrayRef<int64_t> strides,
                                         ArrayRef<int64_t> padding,
                                         SmallVectorImpl<Type> &types) {
  FailureOr<Shape> shape =
      pool2dShape(loc, shapeOf(input), kernel, strides, padding);
  if (failed(shape))
    return failure();
  types.push_back(withShape(*shape, elementOf(input)));
  return success();
}

/// Pool gradients: the forward rule applied to the input shape must give
/// the grad_output shape.
static LogicalResult verifyPoolGrad(Operation *op, Value gradOutput,
                                    Type inputType, ArrayRef<int64_t> kernel,
                                    ArrayRef<int64_t> strides,
                                    ArrayRef<int64_t> padding) {
  auto input = ranked(inputType);
  if (elementOf(gradOutput) != input.getElementType())
    return op->emitOpError("grad_output and grad_input must have the same "
                           "element type");
  FailureOr<Shape> forward =
      pool2dShape(op->getLoc(), input.getShape(), kernel, strides, padding);
  if (failed(forward))
    return failure();
  if (!compatible(*forward, shapeOf(gradOutput)))
    return op->emitOpError("grad_output ")
           << shapeString(shapeOf(gradOutput)) << " is not the pooled shape "
           << shapeString(*forward) << " of " << shapeString(input.getShape());
  return success();
}

LogicalResult MaxPool2dGradOp::verify() {
  if (getInput().getType() != getGradInput().getType())
    return emitOpError("grad_input type ")
           << getGradInput().getType() << " must equal the input type "
           << getInput().getType();
  return verifyPoolGrad(*this, getGradOutput(), getInput().getType(),
                        getKernel(), getStrides(), getPadding());
}

LogicalResult AvgPool2dGradOp::verify() {
  return verifyPoolGrad(*this, getGradOutput(), getGradInput().getType(),
                        getKernel(), getStrides(), getPadding());
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Batch norm: input [N, C, ...] and per-channel vectors named in `vectors`.
static FailureOr<int64_t>
checkBatchNormOperands(std::optional<Location> loc, Value input,
                       ArrayRef<std::pair<StringRef, Value>> vectors) {
  ArrayRef<int64_t> shape = shapeOf(input);
  if (shape.size() < 2)
    return emitOptionalError(loc, "batch norm input must be [N, C, ...] with "
                                  "rank >= 2, got ",
                             shapeString(shape));
  SmallVector<Value> all = {input};
  for (auto &[name, value] : vectors) {
    if (failed(expectVector(loc, name, value, shape[1], "C")))
      return failure();
    all.push_back(value);
  }
  if (failed(sameElementType(loc, "batch norm operands", all)))
    return failure();
  return shape[1];
}

LogicalResult mlir::het::inferBatchNormTypes(std::optional<Location> loc,
                                             Value input, Value scale,
                                             Value bias, double epsilon,
                                             SmallVectorImpl<Type> &types) {
  FailureOr<int64_t> channels =
      checkBatchNormOperands(loc, input, {{"scale", scale}, {"bias", bias}});
  if (failed(channels) || failed(checkEpsilon(loc, epsilon)))
    return failure();
  Type element = elementOf(input);
  types.push_back(input.getType());
  types.push_back(withShape({*channels}, element));
  types.push_back(withShape({*channels}, element));
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkBatchNormOperands(loc, adaptor.getInput(),
                                    {{"scale", adaptor.getScale()},
                                     {"bias", adaptor.getBias()},
                                     {"mean", adaptor.getMean()},
                                     {"variance", adaptor.getVariance()}})) ||
      failed(checkEpsilon(loc, adaptor.getEpsilon().convertToDouble())))
    return failure();
  types.push_back(adaptor.getInput().getType());
  return success();
}

/// The values per channel of batch statistics over `input` [N, C, ...]:
/// `samples` (or N) times the spatial size; nullopt while a size is dynamic.
static std::optional<int64_t> valuesPerChannel(ArrayRef<int64_t> shape,
                                               std::optional<uint64_t> samples) {
  int64_t count = samples ? int64_t(*samples) : shape[0];
  for (size_t i = 2; i < shape.size(); ++i)
    count = shape[i] == ShapedType::kDynamic || count == ShapedType::kDynamic
                ? ShapedType::kDynamic
                : count * shape[i];
  if (count == ShapedType::kDynamic)
    return std::nullopt;
  return count;
}

double BatchNormRunningStatsOp::statisticsCount() {
  return double(valuesPerChannel(shapeOf(getInput()), getSamples()).value_or(0));
}

LogicalResult BatchNormRunningStatsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkBatchNormOperands(loc, adaptor.getInput(),
                                    {{"running_mean", adaptor.getRunningMean()},
                                     {"running_var", adaptor.getRunningVar()},
                                     {"mean", adaptor.getMean()},
                                     {"inv_std", adaptor.getInvStd()}})) ||
      failed(checkEpsilon(loc, adaptor.getEpsilon().convertToDouble())))
    return failure();
  double momentum = adaptor.getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return emitOptionalError(loc, "'momentum' must be in [0, 1], got ", momentum);
  std::optional<int64_t> perChannel =
      valuesPerChannel(shapeOf(adaptor.getInput()), adaptor.getSamples());
  if (perChannel && *perChannel < 2)
    return emitOptionalError(loc, "running statistics need more than one value per channel "
                                  "(PyTorch refuses such a batch in training mode), got ",
                             *perChannel);
  types.push_back(adaptor.getRunningMean().getType());
  types.push_back(adaptor.getRunningVar().getType());
  return success();
}

static LogicalResult inferBatchNormGrad(std::optional<Location> loc,
                                        ArrayRef<std::pair<StringRef, Value>> sameAsInput,
                                        Value input, Value scale, Value mean,
                                        Value invStd,
                                        SmallVectorImpl<Type> &types) {
  for (auto &[name, value] : sameAsInput)
    if (value.getType() != input.getType())
      return emitOptionalError(loc, name, " type ", value.getType(),
                               " must equal the input type ", input.getType());
  FailureOr<int64_t> channels = checkBatchNormOperands(
      loc, input,
      {{"scale", scale}, {"saved_mean", mean}, {"saved_inv_std", invStd}});
  if (failed(channels))
    return failure();
  types.push_back(input.getType());
  types.push_back(scale.getType());
  types.push_back(scale.getType());
  return success();
}

LogicalResult BatchNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  return inferBatchNormGrad(loc, {{"grad_output", adaptor.getGradOutput()}},
                            adaptor.getInput(), adaptor.getScale(),
                            adaptor.getSavedMean(), adaptor.getSavedInvStd(),
                            types);
}

LogicalResult BatchNormReluGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferBatchNormGrad(loc,
                            {{"grad_output", adaptor.getGradOutput()},
                             {"output", adaptor.getOutput()}},
                            adaptor.getInput(), adaptor.getScale(),
                            adaptor.getSavedMean(), adaptor.getSavedInvStd(),
                            types);
}

/// Layer and RMS norm statistics have the input's shape without its last
/// dimension; `kind` names the op in messages. A gradient's `gradOutput`
/// (when given) has the input's type.
static LogicalResult checkLastAxisNormOperands(std::optional<Location> loc,
                                               StringRef kind, Value input, Value scale,
                                               ArrayRef<std::pair<StringRef, Value>> vectors,
                                               ArrayRef<std::pair<StringRef, Value>> rows,
                                               Value gradOutput = {}) {
  if (gradOutput && gradOutput.getType() != input.getType())
    return emitOptionalError(loc, "grad_output type ", gradOutput.getType(),
                             " must equal the input type ", input.getType());
  ArrayRef<int64_t> shape = shapeOf(input);
  if (shape.empty())
    return emitOptionalError(loc, kind, " input must have rank >= 1");
  SmallVector<Value> all = {input, scale};
  if (failed(expectVector(loc, "scale", scale, shape.back(), "D")))
    return failure();
  for (auto &[name, value] : vectors) {
    if (failed(expectVector(loc, name, value, shape.back(), "D")))
      return failure();
    all.push_back(value);
  }
  for (auto &[name, value] : rows) {
    if (!compatible(shapeOf(value), shape.drop_back()))
      return emitOptionalError(loc, name, " must have the input's shape "
                                          "without its last dimension, ",
                               shapeString(shape.drop_back()), ", got ",
                               shapeString(shapeOf(value)));
    all.push_back(value);
  }
  return sameElementType(loc, (Twine(kind) + " operands").str(), all);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(checkLastAxisNormOperands(loc, "layer norm", adaptor.getInput(),
                                       adaptor.getScale(), {{"bias", adaptor.getBias()}},
                                       {})) ||
      failed(checkEpsilon(loc, adaptor.getEpsilon().convertToDouble())))
    return failure();
  auto input = ranked(adaptor.getInput().getType());
  auto stats = withShape(input.getShape().drop_back(), input.getElementType());
  types.append({input, stats, stats});
  return success();
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  if (failed(checkLastAxisNormOperands(loc, "layer norm", adaptor.getInput(),
                                       adaptor.getScale(), {},
                                       {{"saved_mean", adaptor.getSavedMean()},
                                        {"saved_rstd", adaptor.getSavedRstd()}},
                                       adaptor.getGradOutput())))
    return failure();
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getScale().getType());
  types.push_back(adaptor.getScale().getType());
  return success();
}

LogicalResult RMSNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (failed(checkLastAxisNormOperands(loc, "rms norm", adaptor.getInput(),
                                       adaptor.getScale(), {}, {})) ||
      failed(checkEpsilon(loc, adaptor.getEpsilon().convertToDouble())))
    return failure();
  auto input = ranked(adaptor.getInput().getType());
  types.append({input, withShape(input.getShape().drop_back(), input.getElementType())});
  return success();
}

LogicalResult RMSNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  if (failed(checkLastAxisNormOperands(loc, "rms norm", adaptor.getInput(),
                                       adaptor.getScale(), {},
                                       {{"saved_rstd", adaptor.getSavedRstd()}},
                                       adaptor.getGradOutput())))
    return failure();
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getScale().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, losses, embeddings
//===----------------------------------------------------------------------===//

static LogicalResult verifySoftmaxAttrs(Operation *op, RankedTensorType type,
                                        int64_t axis, double scale) {
  int64_t rank = type.getRank();
  if (axis < -rank || axis >= rank)
    return op->emitOpError("axis ") << axis << " is out of range for rank "
                                    << rank;
  if (!(scale > 0.0) || !std::isfinite(scale))
    return op->emitOpError("'scale' must be positive and finite, got ")
           << scale;
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto type = ranked(getInput().getType());
  if (failed(verifySoftmaxAttrs(*this, type, getAxis(),
                                getScale().convertToDouble())))
    return failure();
  if (getCausal()) {
    if (type.getRank() < 2)
      return emitOpError("causal softmax needs rank >= 2 ([..., queries, keys])");
    if (getAxis() != -1 && getAxis() != type.getRank() - 1)
      return emitOpError("causal softmax must normalize the last axis, got axis ")
             << getAxis();
  }
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return verifySoftmaxAttrs(*this, ranked(getOutput().getType()), getAxis(),
                            getScale().convertToDouble());
}

/// Checks attention's operands ([..., Q, D], [..., K, D], [..., K, E]) and
/// returns the result type [..., Q, E].
static FailureOr<Type> attentionResultType(std::optional<Location> loc, Value query,
                                           Value key, Value value, double scale) {
  if (failed(sameElementType(loc, "attention operands", {query, key, value})))
    return failure();
  ArrayRef<int64_t> q = shapeOf(query), k = shapeOf(key), v = shapeOf(value);
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
    return emitOptionalError(loc, "attention needs query, key and value of one rank >= 2, got ",
                             shapeString(q), ", ", shapeString(k), " and ", shapeString(v));
  size_t n = q.size();
  for (size_t d = 0; d + 2 < n; ++d)
    if (!compatible(q[d], k[d]) || !compatible(q[d], v[d]))
      return emitOptionalError(loc, "attention operands differ in leading dimension ", d, ": ",
                               shapeString(q), ", ", shapeString(k), " and ", shapeString(v));
  if (!compatible(q[n - 1], k[n - 1]))
    return emitOptionalError(loc, "query and key feature sizes differ: ", shapeString(q),
                             " and ", shapeString(k));
  if (!compatible(k[n - 2], v[n - 2]))
    return emitOptionalError(loc, "key and value counts differ: ", shapeString(k), " and ",
                             shapeString(v));
  if (!(scale > 0.0) || !std::isfinite(scale))
    return emitOptionalError(loc, "attention 'scale' must be positive and finite, got ", scale);
  SmallVector<int64_t> result(q.begin(), q.end());
  result[n - 1] = v[n - 1];
  return Type(withShape(result, ranked(query.getType()).getElementType()));
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  FailureOr<Type> result = attentionResultType(loc, adaptor.getQuery(), adaptor.getKey(),
                                               adaptor.getValue(),
                                               adaptor.getScale().convertToDouble());
  if (failed(result))
    return failure();
  types.push_back(*result);
  return success();
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  FailureOr<Type> result = attentionResultType(loc, adaptor.getQuery(), adaptor.getKey(),
                                               adaptor.getValue(),
                                               adaptor.getScale().convertToDouble());
  if (failed(result))
    return failure();
  ArrayRef<int64_t> outputShape = cast<RankedTensorType>(*result).getShape();
  using Named = std::pair<const char *, Value>;
  for (auto [name, operand] :
       {Named{"grad_output", adaptor.getGradOutput()}, Named{"output", adaptor.getOutput()}})
    if (shapeOf(operand) != outputShape)
      return emitOptionalError(loc, "attention gradient's ", name, " must be ",
                               shapeString(outputShape), ", got ", shapeString(shapeOf(operand)));
  types.append({adaptor.getQuery().getType(), adaptor.getKey().getType(),
                adaptor.getValue().getType()});
  return success();
}

static LogicalResult checkLabels(std::optional<Location> loc, Value logits,
                                 Value labels) {
  ArrayRef<int64_t> shape = shapeOf(logits);
  if (shape.empty())
    return emitOptionalError(loc, "logits must be [..., classes] with rank >= 1");
  if (!compatible(shapeOf(labels), shape.drop_back()))
    return emitOptionalError(loc, "labels must have the logits' shape without "
                                  "the class dimension, ",
                             shapeString(shape.drop_back()), ", got ",
                             shapeString(shapeOf(labels)));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  if (failed(checkLabels(loc, adaptor.getLogits(), adaptor.getLabels())))
    return failure();
  types.push_back(withShape({}, elementOf(adaptor.getLogits())));
  return success();
}

LogicalResult CrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (failed(checkLabels(loc, adaptor.getLogits(), adaptor.getLabels())))
    return failure();
  if (elementOf(adaptor.getGradLoss()) != elementOf(adaptor.getLogits()))
    return emitOptionalError(loc, "grad_loss and logits must have the same "
                                  "element type");
  types.push_back(adaptor.getLogits().getType());
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> table = shapeOf(adaptor.getTable());
  if (table.size() != 2)
    return emitOptionalError(loc, "embedding table must be 2-D [V, D], got ",
                             shapeString(table));
  Shape result(shapeOf(adaptor.getIndices()));
  result.push_back(table[1]);
  types.push_back(withShape(result, elementOf(adaptor.getTable())));
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getGradTable());
  if (table.size() != 2)
    return emitOpError("grad_table must be 2-D [V, D], got ")
           << shapeString(table);
  Shape expected(shapeOf(getIndices()));
  expected.push_back(table[1]);
  if (!compatible(shapeOf(getGradOutput()), expected))
    return emitOpError("grad_output must be indices shape + [D] = ")
           << shapeString(expected) << ", got "
           << shapeString(shapeOf(getGradOutput()));
  if (elementOf(getGradOutput()) != elementOf(getGradTable()))
    return emitOpError("grad_output and grad_table must have the same element "
                       "type");
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and layout
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepDims,
                                 SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t rank = shape.size();
  if (axes.empty())
    return emitOptionalError(loc, "'axes' must name at least one axis");
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank);
    if (!seen.insert(axis < 0 ? axis + rank : axis).second)
      return emitOptionalError(loc, "axis ", axis, " is named twice");
  }
  Shape result;
  for (int64_t i = 0; i < rank; ++i) {
    if (!seen.contains(i))
      result.push_back(shape[i]);
    else if (keepDims)
      result.push_back(1);
  }
  types.push_back(withShape(result, elementOf(input)));
  return success();
}

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepDims(), types);
}

LogicalResult ReduceMaxOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepDims(), types);
}

LogicalResult ReduceMeanOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferReduce(loc, adaptor.getInput(), adaptor.getAxes(),
                     adaptor.getKeepDims(), types);
}

/// Checks that `from` broadcasts (NumPy rules) to `to`: the shared rule of
/// het.sum_to_shape (result -> input) and het.broadcast_to (input -> result).
static LogicalResult verifyBroadcastsTo(Operation *op, Value fromValue,
                                        StringRef fromName, Value toValue,
                                        StringRef toName) {
  auto from = ranked(fromValue.getType());
  auto to = ranked(toValue.getType());
  if (from.getElementType() != to.getElementType())
    return op->emitOpError("result element type must equal the input's");
  SmallVector<Type> broadcast;
  if (from.getRank() > to.getRank() ||
      failed(inferBroadcastType(std::nullopt, from, to, broadcast)) ||
      !compatible(ranked(broadcast.front()).getShape(), to.getShape()))
    return op->emitOpError() << fromName << " " << shapeString(from.getShape())
                             << " does not broadcast to the " << toName << " "
                             << shapeString(to.getShape());
  return success();
}

LogicalResult SumToShapeOp::verify() {
  return verifyBroadcastsTo(*this, getResult(), "result", getInput(), "input");
}

LogicalResult BroadcastToOp::verify() {
  return verifyBroadcastsTo(*this, getInput(), "input", getResult(), "result");
}

LogicalResult LossScaleUpdateOp::verify() {
  if (!(getInitScale().convertToDouble() > 0) || !std::isfinite(getInitScale().convertToDouble()))
    return emitOpError("'init_scale' must be positive and finite");
  if (!(getGrowthFactor().convertToDouble() > 1.0))
    return emitOpError("'growth_factor' must be greater than 1");
  double backoff = getBackoffFactor().convertToDouble();
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitOpError("'backoff_factor' must be between 0 and 1");
  if (getGrowthInterval() < 1)
    return emitOpError("'growth_interval' must be at least 1");
  return success();
}

LogicalResult ClipByNormOp::verify() {
  double maxNorm = getMaxNorm().convertToDouble();
  if (!(maxNorm > 0) || !std::isfinite(maxNorm))
    return emitOpError("'max_norm' must be positive and finite");
  return success();
}

LogicalResult CastOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (!compatible(input.getShape(), result.getShape()))
    return emitOpError("changes the format, not the shape: input ")
           << input << ", result " << result;
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto input = ranked(getInput().getType());
  auto result = ranked(getResult().getType());
  if (input.getElementType() != result.getElementType())
    return emitOpError("cannot change the element type from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOpError("element count changes from ")
           << input.getNumElements() << " " << shapeString(input.getShape())
           << " to " << result.getNumElements() << " "
           << shapeString(result.getShape());
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> shape = shapeOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (perm.size() != shape.size())
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries but the input has rank ", shape.size());
  SmallVector<bool> used(shape.size(), false);
  Shape result;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(shape.size()) || used[p])
      return emitOptionalError(loc, "permutation ", shapeString(perm),
                               " is not a permutation of 0..",
                               static_cast<int64_t>(shape.size()) - 1);
    used[p] = true;
    result.push_back(shape[p]);
  }
  types.push_back(withShape(result, elementOf(adaptor.getInput())));
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

static LogicalResult checkRange(Operation *op, StringRef name, double value,
                                double low, bool lowInclusive, double high,
                                bool highInclusive) {
  bool ok = std::isfinite(value) &&
            (lowInclusive ? value >= low : value > low) &&
            (highInclusive ? value <= high : value < high);
  if (ok)
    return success();
  // %g prints bounds as people write them (0, 1, 0.001).
  auto number = [](double v) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%g", v);
    return std::string(buffer);
  };
  auto diag = op->emitOpError("'") << name << "' must be in "
                                   << (lowInclusive ? "[" : "(") << number(low)
                                   << ", ";
  if (std::isinf(high))
    diag << "inf)";
  else
    diag << number(high) << (highInclusive ? "]" : ")");
  return diag << ", got " << number(value);
}

LogicalResult SGDOp::verify() {
  const double inf = INFINITY;
  if (failed(checkRange(*this, "lr", getLr().convertToDouble(), 0, true, inf, false)) ||
      failed(checkRange(*this, "momentum", getMomentum().convertToDouble(), 0,
                        true, 1, false)) ||
      failed(checkRange(*this, "weight_decay",
                        getWeightDecay().convertToDouble(), 0, true, inf, false)))
    return failure();
  if (getNesterov() && getMomentum().convertToDouble() == 0.0)
    return emitOpError("nesterov needs a non-zero momentum");
  return success();
}

LogicalResult AdamOp::verify() {
  const double inf = INFINITY;
  if (failed(checkRange(*this, "lr", getLr().convertToDouble(), 0, true, inf, false)) ||
      failed(checkRange(*this, "beta1", getBeta1().convertToDouble(), 0, true, 1, false)) ||
      failed(checkRange(*this, "beta2", getBeta2().convertToDouble(), 0, true, 1, false)) ||
      failed(checkRange(*this, "epsilon", getEpsilon().convertToDouble(), 0,
                        false, inf, false)) ||
      failed(checkRange(*this, "weight_decay",
                        getWeightDecay().convertToDouble(), 0, true, inf, false)))
    return failure();
  return success();
}
