//===- HetGradients.cpp - reverse-mode gradient rule of every het op -------===//
//
// One `buildGradients` per differentiable op (DifferentiableOpInterface).
// Each rule emits het ops only, so the backward pass is ordinary het IR that
// every later pass (fusion, partitioning, lowering) and the reference
// evaluator already understand. Results that carry saved statistics (batch,
// layer and RMS norm) are for the backward op only: a gradient flowing into them
// is rejected rather than silently dropped.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::het;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Sums `grad` down to `target`'s shape when broadcasting stretched it.
Value sumTo(OpBuilder &b, Location loc, Value grad, Type target) {
  if (grad.getType() == target)
    return grad;
  return b.create<SumToShapeOp>(loc, target, grad);
}

/// A 0-d constant of `like`'s element type, broadcast by the consumer.
Value scalarConstant(OpBuilder &b, Location loc, Value like, double value) {
  auto element = cast<FloatType>(tensorType(like).getElementType());
  auto type = RankedTensorType::get({}, element);
  return b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
}

Value scaled(OpBuilder &b, Location loc, Value value, double factor) {
  return b.create<MulOp>(loc, value, scalarConstant(b, loc, value, factor));
}

/// Swaps the last two dimensions (the matrix transpose of a batched matrix).
Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  int64_t rank = tensorType(value).getRank();
  SmallVector<int64_t> permutation = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(permutation[rank - 1], permutation[rank - 2]);
  return b.create<TransposeOp>(loc, value, b.getDenseI64ArrayAttr(permutation));
}

/// The gradient of a reduction: the result gradient brought back to the
/// reduced dimensions (as size 1) and broadcast over them.
Value unreduce(OpBuilder &b, Location loc, Value grad, RankedTensorType input,
               ArrayRef<int64_t> axes, bool keepDims) {
  if (!keepDims) {
    SmallVector<int64_t> kept = llvm::to_vector(input.getShape());
    for (int64_t axis : axes)
      kept[axis < 0 ? axis + input.getRank() : axis] = 1;
    grad = b.create<ReshapeOp>(
        loc, RankedTensorType::get(kept, input.getElementType()), grad);
  }
  return b.create<BroadcastToOp>(loc, input, grad);
}

/// Fails on `op` when a gradient flows into one of its saved-statistics
/// results (index >= 1), which no rule here accounts for.
LogicalResult rejectStatisticsGradients(Operation *op,
                                        ArrayRef<Value> resultGradients) {
  for (unsigned i = 1; i < resultGradients.size(); ++i)
    if (resultGradients[i])
      return op->emitOpError("result #")
             << i << " (saved statistics) is used on the path to the loss; "
             << "only the normalized output is differentiable";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<ReluGradOp>(getLoc(), getType(), dys[0], getInput()));
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<GeluGradOp>(getLoc(), getType(), dys[0], getInput(),
                                     getApproximateAttr()));
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  dxs.push_back(sumTo(b, getLoc(), dys[0], getLhs().getType()));
  dxs.push_back(sumTo(b, getLoc(), dys[0], getRhs().getType()));
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  dxs.push_back(sumTo(b, getLoc(), dys[0], getLhs().getType()));
  dxs.push_back(sumTo(b, getLoc(), scaled(b, getLoc(), dys[0], -1.0),
                      getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(sumTo(b, loc, b.create<MulOp>(loc, dys[0], getRhs()),
                      getLhs().getType()));
  dxs.push_back(sumTo(b, loc, b.create<MulOp>(loc, dys[0], getLhs()),
                      getRhs().getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

// With op(X) = X or X^T as the flags say, C = op(A) op(B) gives
// d op(A) = dC op(B)^T and d op(B) = op(A)^T dC. Both are one matmul with
// flipped flags; B stays the right operand so a plain-matrix B shared by a
// batch keeps working, and its gradient is summed over the batch.
LogicalResult MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dC = dys[0];
  bool tA = getTransposeLhs(), tB = getTransposeRhs();

  Value dOpA = b.create<MatmulOp>(loc, dC, getRhs(), /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/!tB);
  dxs.push_back(tA ? transposeLastTwo(b, loc, dOpA) : dOpA);

  Value dOpB = b.create<MatmulOp>(loc, getLhs(), dC, /*transpose_lhs=*/!tA,
                                  /*transpose_rhs=*/false);
  int64_t batchRank = tensorType(dOpB).getRank() - tensorType(getRhs()).getRank();
  if (batchRank > 0)
    dOpB = b.create<ReduceSumOp>(
        loc, dOpB,
        b.getDenseI64ArrayAttr(llvm::to_vector(llvm::seq<int64_t>(0, batchRank))),
        /*keep_dims=*/false);
  dxs.push_back(tB ? transposeLastTwo(b, loc, dOpB) : dOpB);
  return success();
}

LogicalResult LinearOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = dys[0];
  switch (getActivation()) {
  case Activation::None:
    break;
  case Activation::ReLU:
    // relu(z) > 0 exactly where z > 0, so the output is as good a mask as
    // the pre-activation, which a fused layer never materializes.
    dy = b.create<ReluGradOp>(loc, getType(), dy, getResult());
    break;
  case Activation::GELU: {
    // GELU's derivative needs the pre-activation: recompute it.
    Value preActivation =
        b.create<LinearOp>(loc, getInput(), getWeight(), getBias(), Activation::None);
    dy = b.create<GeluGradOp>(loc, getType(), dy, preActivation,
                              GeluApproximation::None);
    break;
  }
  }
  auto grads = b.create<LinearGradOp>(loc, dy, getInput(), getWeight());
  dxs.push_back(grads.getGradInput());
  dxs.push_back(grads.getGradWeight());
  if (getBias())
    dxs.push_back(grads.getGradBias());
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(b.create<Conv2dGradInputOp>(
      loc, getInput().getType(), dys[0], getFilter(), getStridesAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr()));
  dxs.push_back(b.create<Conv2dGradFilterOp>(
      loc, getFilter().getType(), dys[0], getInput(), getStridesAttr(),
      getPaddingAttr(), getDilationAttr(), getGroupsAttr()));
  if (getBias())
    dxs.push_back(b.create<ReduceSumOp>(loc, dys[0],
                                        b.getDenseI64ArrayAttr({0, 2, 3}),
                                        /*keep_dims=*/false));
  return success();
}

LogicalResult MaxPool2dOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<MaxPool2dGradOp>(getLoc(), getInput().getType(), dys[0],
                                          getInput(), getKernelAttr(),
                                          getStridesAttr(), getPaddingAttr()));
  return success();
}

LogicalResult AvgPool2dOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<AvgPool2dGradOp>(getLoc(), getInput().getType(), dys[0],
                                          getKernelAttr(), getStridesAttr(),
                                          getPaddingAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (failed(rejectStatisticsGradients(*this, dys)))
    return failure();
  auto grads = b.create<BatchNormGradOp>(getLoc(), dys[0], getInput(), getScale(),
                                         getSavedMean(), getSavedInvStd());
  dxs.append({grads.getGradInput(), grads.getGradScale(), grads.getGradBias()});
  return success();
}

LogicalResult BatchNormReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                              SmallVectorImpl<Value> &dxs) {
  if (failed(rejectStatisticsGradients(*this, dys)))
    return failure();
  auto grads = b.create<BatchNormReluGradOp>(getLoc(), dys[0], getOutput(),
                                             getInput(), getScale(),
                                             getSavedMean(), getSavedInvStd());
  dxs.append({grads.getGradInput(), grads.getGradScale(), grads.getGradBias()});
  return success();
}

// Eval mode (frozen statistics, as fine-tuning with model.eval() or
// FrozenBatchNorm2d): an affine map per channel, y = (x - mean) * s * gamma
// + beta with s = 1 / sqrt(var + eps). Per channel,
//   dx = dy * gamma * s,   dgamma = sum(dy * xhat),   dbeta = sum(dy),
//   dmean = -gamma * s * dbeta,   dvar = -gamma * s^2 * dgamma / 2,
// with xhat = (x - mean) * s. All in generic het ops.
LogicalResult BatchNormInferenceOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                                   SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  RankedTensorType input = tensorType(getInput());
  RankedTensorType channels = tensorType(getScale());
  double epsilon = getEpsilon().convertToDouble();
  auto elementwise = [&](Type type, ValueRange inputs,
                         function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return b.create<ElementwiseOp>(loc, type, inputs, body).getResult();
  };
  auto constant = [&](OpBuilder &nb, Location l, double value) {
    return nb.create<arith::ConstantOp>(l, nb.getFloatAttr(input.getElementType(), value))
        .getResult();
  };
  // [C] -> [C, 1, ...], which broadcasts against [N, C, ...].
  SmallVector<int64_t> perChannelShape(input.getRank() - 1, 1);
  perChannelShape[0] = input.getDimSize(1);
  auto perChannel = [&](Value v) -> Value {
    return b.create<ReshapeOp>(
        loc, RankedTensorType::get(perChannelShape, input.getElementType()), v);
  };
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (i != 1)
      axes.push_back(i);
  auto sumOverChannel = [&](Value v) -> Value {
    return b.create<ReduceSumOp>(loc, channels, v, b.getDenseI64ArrayAttr(axes), false);
  };
  Value invStd = elementwise(channels, {getVariance()}, [&](OpBuilder &nb, Location l,
                                                           ValueRange a) {
    return nb.create<math::RsqrtOp>(l, nb.create<arith::AddFOp>(l, a[0], constant(nb, l, epsilon)))
        .getResult();
  });
  Value gain = elementwise(channels, {getScale(), invStd},
                           [&](OpBuilder &nb, Location l, ValueRange a) {
                             return nb.create<arith::MulFOp>(l, a[0], a[1]).getResult();
                           });
  Value dx = elementwise(input, {dys[0], perChannel(gain)},
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           return nb.create<arith::MulFOp>(l, a[0], a[1]).getResult();
                         });
  Value dyXhat = elementwise(
      input, {dys[0], getInput(), perChannel(getMean()), perChannel(invStd)},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value xhat = nb.create<arith::MulFOp>(l, nb.create<arith::SubFOp>(l, a[1], a[2]), a[3]);
        return nb.create<arith::MulFOp>(l, a[0], xhat).getResult();
      });
  Value dgamma = sumOverChannel(dyXhat);
  Value dbeta = sumOverChannel(dys[0]);
  Value dmean = elementwise(channels, {gain, dbeta}, [&](OpBuilder &nb, Location l,
                                                        ValueRange a) {
    return nb.create<arith::NegFOp>(l, nb.create<arith::MulFOp>(l, a[0], a[1])).getResult();
  });
  Value dvar = elementwise(channels, {getScale(), invStd, dgamma},
                           [&](OpBuilder &nb, Location l, ValueRange a) {
                             Value s2 = nb.create<arith::MulFOp>(l, a[1], a[1]);
                             Value g = nb.create<arith::MulFOp>(l, a[0], s2);
                             return nb.create<arith::MulFOp>(
                                        l, nb.create<arith::MulFOp>(l, g, a[2]),
                                        constant(nb, l, -0.5))
                                 .getResult();
                           });
  dxs.append({dx, dgamma, dbeta, dmean, dvar});
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (failed(rejectStatisticsGradients(*this, dys)))
    return failure();
  auto grads = b.create<LayerNormGradOp>(getLoc(), dys[0], getInput(), getScale(),
                                         getSavedMean(), getSavedRstd());
  dxs.append({grads.getGradInput(), grads.getGradScale(), grads.getGradBias()});
  return success();
}

LogicalResult RMSNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (failed(rejectStatisticsGradients(*this, dys)))
    return failure();
  auto grads = b.create<RMSNormGradOp>(getLoc(), dys[0], getInput(), getScale(),
                                       getSavedRstd());
  dxs.append({grads.getGradInput(), grads.getGradScale()});
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, losses, embeddings
//===----------------------------------------------------------------------===//

// The probabilities are not kept: the gradient op recomputes them from the
// query and key (FlashAttention), so a layer saves [..., Q, E] rather than
// [..., Q, K].
LogicalResult AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  auto grads = b.create<AttentionGradOp>(getLoc(), dys[0], getQuery(), getKey(), getValue(),
                                         getResult(), getScaleAttr(), getCausalAttr());
  dxs.append({grads.getGradQuery(), grads.getGradKey(), grads.getGradValue()});
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<SoftmaxGradOp>(getLoc(), getType(), dys[0], getResult(),
                                        getAxisAttr(), getScaleAttr()));
  return success();
}

LogicalResult CrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                             SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<CrossEntropyGradOp>(getLoc(), dys[0], getLogits(),
                                             getLabels()));
  dxs.push_back(Value()); // class labels are integers
  return success();
}

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<EmbeddingGradOp>(getLoc(), getTable().getType(), dys[0],
                                          getIndices(), getVocabShardAttr(),
                                          getPaddingIdxAttr()));
  dxs.push_back(Value()); // token ids are integers
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and layout
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  dxs.push_back(unreduce(b, getLoc(), dys[0], tensorType(getInput()), getAxes(),
                         getKeepDims()));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  RankedTensorType input = tensorType(getInput());
  int64_t count = 1;
  for (int64_t axis : getAxes()) {
    int64_t size = input.getDimSize(axis < 0 ? axis + input.getRank() : axis);
    if (ShapedType::isDynamic(size))
      return emitOpError("gradient needs a static size for reduced axis ") << axis;
    count *= size;
  }
  Value spread = unreduce(b, getLoc(), dys[0], input, getAxes(), getKeepDims());
  // grad / N, as PyTorch: N is exact in any precision, 1/N is not.
  Type element = input.getElementType();
  dxs.push_back(b.create<ElementwiseOp>(
      getLoc(), input, ValueRange{spread}, [&](OpBuilder &nb, Location l, ValueRange v) {
        Value n = nb.create<arith::ConstantOp>(l, nb.getFloatAttr(element, double(count)));
        return nb.create<arith::DivFOp>(l, v[0], n).getResult();
      }));
  return success();
}

// PyTorch's amax: grad / count * (x == max), the count of the elements
// equal to the maximum in each reduced group.
LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  RankedTensorType input = tensorType(getInput());
  Type element = input.getElementType();
  Value peak = unreduce(b, loc, getResult(), input, getAxes(), getKeepDims());
  auto isPeak = [&](OpBuilder &nb, Location l, Value x, Value m) {
    return nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OEQ, x, m).getResult();
  };
  Value hits = b.create<ElementwiseOp>(
      loc, input, ValueRange{getInput(), peak}, [&](OpBuilder &nb, Location l, ValueRange v) {
        Value one = nb.create<arith::ConstantOp>(l, nb.getFloatAttr(element, 1.0));
        Value zero = nb.create<arith::ConstantOp>(l, nb.getFloatAttr(element, 0.0));
        return nb.create<arith::SelectOp>(l, isPeak(nb, l, v[0], v[1]), one, zero).getResult();
      });
  Value count = b.create<ReduceSumOp>(loc, hits, getAxesAttr(), getKeepDimsAttr());
  Value spreadCount = unreduce(b, loc, count, input, getAxes(), getKeepDims());
  Value spreadGrad = unreduce(b, loc, dys[0], input, getAxes(), getKeepDims());
  dxs.push_back(b.create<ElementwiseOp>(
      loc, input, ValueRange{getInput(), peak, spreadGrad, spreadCount},
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value zero = nb.create<arith::ConstantOp>(l, nb.getFloatAttr(element, 0.0));
        Value share = nb.create<arith::DivFOp>(l, v[2], v[3]);
        return nb.create<arith::SelectOp>(l, isPeak(nb, l, v[0], v[1]), share, zero).getResult();
      }));
  return success();
}

LogicalResult SumToShapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<BroadcastToOp>(getLoc(), getInput().getType(), dys[0]));
  return success();
}

LogicalResult BroadcastToOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                            SmallVectorImpl<Value> &dxs) {
  dxs.push_back(sumTo(b, getLoc(), dys[0], getInput().getType()));
  return success();
}

/// The gradient of a cast is the incoming gradient in the input's format:
/// a bf16 copy of an f32 parameter passes its gradient back in f32, where
/// it accumulates and the optimizer reads it.
LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<CastOp>(getLoc(), getInput().getType(), dys[0]));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<ReshapeOp>(getLoc(), getInput().getType(), dys[0]));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  ArrayRef<int64_t> permutation = getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [index, source] : llvm::enumerate(permutation))
    inverse[source] = static_cast<int64_t>(index);
  dxs.push_back(b.create<TransposeOp>(getLoc(), dys[0],
                                      b.getDenseI64ArrayAttr(inverse)));
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor parallelism (Megatron's conjugate pair)
//===----------------------------------------------------------------------===//

namespace {
/// Collectives are differentiable only among tensor-parallel devices, whose
/// computation after the collective is replicated; among data-parallel
/// replicas each member's loss is a different term and these rules would
/// be wrong.
LogicalResult requireTensorParallelGroup(Operation *op, SymbolRefAttr group) {
  if (SymbolTable::lookupNearestSymbolFrom<TensorParallelGroupOp>(op, group))
    return success();
  return op->emitOpError("has a gradient only over a het.tensor_parallel_group, not over ")
         << group;
}
} // namespace

LogicalResult TensorParallelCopyOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                                   SmallVectorImpl<Value> &dxs) {
  // Every member's partial product used the replicated input: its gradient
  // is the sum of the members' partial gradients.
  dxs.push_back(b.create<AllReduceOp>(getLoc(), dys[0].getType(), dys[0], getGroupAttr(),
                                      ReductionKind::Sum, CollectiveAlgorithm::Auto,
                                      CompressionKind::None, FloatAttr()));
  return success();
}

LogicalResult AllReduceOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (failed(requireTensorParallelGroup(*this, getGroup())))
    return failure();
  if (getReduction() != ReductionKind::Sum)
    return emitOpError("has a gradient only for a sum over tensor-parallel devices");
  dxs.push_back(dys[0]);
  return success();
}

LogicalResult AllGatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (failed(requireTensorParallelGroup(*this, getGroup())))
    return failure();
  // Every member holds the same gradient of the gathered tensor; the mean
  // of them, scattered, is each member's own slice.
  dxs.push_back(b.create<ReduceScatterOp>(getLoc(), getInput().getType(), dys[0], getGroup(),
                                          ReductionKind::Avg, getAxis(), /*by_share=*/false,
                                          CollectiveAlgorithm::Auto, CompressionKind::None,
                                          FloatAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Concatenation and slicing
//===----------------------------------------------------------------------===//

// Each input's gradient is its range of the result gradient.
LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  int64_t rank = tensorType(getResult()).getRank();
  int64_t axis = getAxis() < 0 ? getAxis() + rank : getAxis();
  int64_t offset = 0;
  for (Value input : getInputs()) {
    int64_t size = tensorType(input).getDimSize(axis);
    if (ShapedType::isDynamic(size))
      return emitOpError("gradient needs static sizes along axis ") << axis;
    dxs.push_back(b.create<SliceOp>(getLoc(), dys[0], b.getDenseI64ArrayAttr({axis}),
                                    b.getDenseI64ArrayAttr({offset}),
                                    b.getDenseI64ArrayAttr({offset + size}),
                                    b.getDenseI64ArrayAttr({1})));
    offset += size;
  }
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  RankedTensorType input = tensorType(getInput());
  SmallVector<int64_t> sizes;
  for (int64_t axis : getAxes()) {
    int64_t size = input.getDimSize(axis < 0 ? axis + input.getRank() : axis);
    if (ShapedType::isDynamic(size))
      return emitOpError("gradient needs a static size along axis ") << axis;
    sizes.push_back(size);
  }
  dxs.push_back(b.create<SliceGradOp>(getLoc(), dys[0], getAxesAttr(), getStartsAttr(),
                                      getStepsAttr(), b.getDenseI64ArrayAttr(sizes)));
  return success();
}

LogicalResult SliceGradOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  RankedTensorType taken = tensorType(getGradOutput());
  SmallVector<int64_t> ends;
  for (auto [axis, start, step] : llvm::zip(getAxes(), getStarts(), getSteps())) {
    int64_t length = taken.getDimSize(axis < 0 ? axis + taken.getRank() : axis);
    ends.push_back(length == 0 ? start : start + (length - 1) * step + 1);
  }
  dxs.push_back(b.create<SliceOp>(getLoc(), dys[0], getAxesAttr(), getStartsAttr(),
                                  b.getDenseI64ArrayAttr(ends), getStepsAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

// Linear in its input for a fixed mask: the same op (same key, same
// counters, so the same mask) on the result gradient.
LogicalResult DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(b.create<DropoutOp>(getLoc(), dys[0], getPAttr(), getSeedAttr(), getStreamAttr()));
  return success();
}
