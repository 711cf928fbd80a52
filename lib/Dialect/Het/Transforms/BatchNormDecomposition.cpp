//===- BatchNormDecomposition.cpp - batch norm as sums and element-wise ops ===//
//
// See include/het/Dialect/Het/Transforms/BatchNormDecomposition.h for the
// formulas. Every op built is het IR: reductions, reshapes and
// het.elementwise bodies, which the CPU lowering fuses into single loops and
// the GPU lowering maps onto threads (the sums as per-channel reductions).
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/Transforms/BatchNormDecomposition.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::het;

namespace {

struct Builder {
  OpBuilder &b;
  Location loc;
  CombinePartialSums combine;
  RankedTensorType input; // [b, C, ...]
  double count;           // samples the statistics cover times the spatial size

  /// Builds before `op`, normalizing `x` over `samples` samples (for
  /// SyncBatchNorm every replica's share of the micro-batch together).
  static Builder at(OpBuilder &b, Operation *op, Value x, double samples,
                    CombinePartialSums combine) {
    auto input = cast<RankedTensorType>(x.getType());
    double spatial = 1;
    for (int64_t i = 2; i < input.getRank(); ++i)
      spatial *= double(input.getDimSize(i));
    return Builder{b, op->getLoc(), combine, input, samples * spatial};
  }

  SmallVector<int64_t> reducedAxes() const {
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < input.getRank(); ++i)
      if (i != 1)
        axes.push_back(i);
    return axes;
  }
  RankedTensorType channels() const {
    return RankedTensorType::get({input.getDimSize(1)}, input.getElementType());
  }
  /// [C] -> [C, 1, ...] so it broadcasts against [b, C, ...].
  Value perChannel(Value v) {
    SmallVector<int64_t> shape(input.getRank() - 1, 1);
    shape[0] = input.getDimSize(1);
    return b.create<ReshapeOp>(loc, RankedTensorType::get(shape, input.getElementType()), v);
  }
  Value sum(Value v) {
    return b.create<ReduceSumOp>(loc, channels(), v, b.getDenseI64ArrayAttr(reducedAxes()),
                                 /*keep_dims=*/false);
  }
  Value overReplicas(Value v) { return combine(b, loc, v); }
  Value scalar(Type element, double value) {
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(element, value));
  }
  Value elementwise(Type type, ValueRange inputs,
                    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
    return b.create<ElementwiseOp>(loc, type, inputs, body);
  }
};

/// Runs `rewrite`, which builds ops before `op` and replaces it, and gives
/// every op it built `op`'s discardable attributes (het.layer,
/// het.backward).
LogicalResult rewriteInheriting(Operation *op,
                                function_ref<LogicalResult(OpBuilder &)> rewrite) {
  Block *block = op->getBlock();
  Operation *before = op->getPrevNode();
  SmallVector<NamedAttribute> attrs(op->getDiscardableAttrs());
  Operation *after = op->getNextNode();
  OpBuilder b(op);
  if (failed(rewrite(b)))
    return failure();
  Block::iterator begin = before ? std::next(before->getIterator()) : block->begin();
  Block::iterator end = after ? after->getIterator() : block->end();
  for (Operation &made : llvm::make_range(begin, end))
    for (NamedAttribute attr : attrs)
      made.setAttr(attr.getName(), attr.getValue());
  return success();
}

LogicalResult rewriteForward(Operation *op, bool relu, double samples, CombinePartialSums combine,
                             OpBuilder &b) {
  Value x = op->getOperand(0), gamma = op->getOperand(1), beta = op->getOperand(2);
  double epsilon = op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble();
  Builder h = Builder::at(b, op, x, samples, combine);
  RankedTensorType input = h.input;
  Type element = input.getElementType();
  double n = h.count;
  Value total = h.overReplicas(h.sum(x));
  Value mean = h.elementwise(h.channels(), total, [&](OpBuilder &nb, Location l, ValueRange v) {
    return nb.create<arith::MulFOp>(l, v[0], h.scalar(element, 1.0 / n)).getResult();
  });
  Value meanC = h.perChannel(mean);
  Value squares = h.elementwise(input, {x, meanC}, [&](OpBuilder &nb, Location l, ValueRange v) {
    Value d = nb.create<arith::SubFOp>(l, v[0], v[1]);
    return nb.create<arith::MulFOp>(l, d, d).getResult();
  });
  Value spread = h.overReplicas(h.sum(squares));
  Value invStd =
      h.elementwise(h.channels(), spread, [&](OpBuilder &nb, Location l, ValueRange v) {
        Value var = nb.create<arith::MulFOp>(l, v[0], h.scalar(element, 1.0 / n));
        Value shifted = nb.create<arith::AddFOp>(l, var, h.scalar(element, epsilon));
        return nb.create<math::RsqrtOp>(l, shifted).getResult();
      });
  Value y = h.elementwise(
      input, {x, meanC, h.perChannel(invStd), h.perChannel(gamma), h.perChannel(beta)},
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value d = nb.create<arith::SubFOp>(l, v[0], v[1]);
        Value scaled = nb.create<arith::MulFOp>(l, nb.create<arith::MulFOp>(l, d, v[2]), v[3]);
        Value out = nb.create<arith::AddFOp>(l, scaled, v[4]);
        if (relu)
          out = nb.create<arith::MaximumFOp>(l, out, h.scalar(element, 0.0));
        return out;
      });
  // The running statistics are over the same samples (for SyncBatchNorm,
  // the whole micro-batch's).
  if (samples != double(input.getDimSize(0)))
    for (Operation *user : op->getResult(1).getUsers())
      if (auto stats = dyn_cast<BatchNormRunningStatsOp>(user))
        stats.setSamples(static_cast<int64_t>(samples));
  op->getResult(0).replaceAllUsesWith(y);
  op->getResult(1).replaceAllUsesWith(mean);
  op->getResult(2).replaceAllUsesWith(invStd);
  op->erase();
  return success();
}

LogicalResult rewriteBackward(Operation *op, bool relu, double samples, CombinePartialSums combine,
                              OpBuilder &b) {
  // batch_norm_grad(dy, x, gamma, mean, inv_std);
  // batch_norm_relu_grad(dy, y, x, gamma, mean, inv_std).
  unsigned k = relu ? 1 : 0;
  Value dy = op->getOperand(0), x = op->getOperand(1 + k), gamma = op->getOperand(2 + k),
        mean = op->getOperand(3 + k), invStd = op->getOperand(4 + k);
  Builder h = Builder::at(b, op, x, samples, combine);
  RankedTensorType input = h.input;
  Type element = input.getElementType();
  double n = h.count;
  if (relu) // y > 0 exactly where the normalized value was
    dy = h.elementwise(input, {dy, op->getOperand(1)}, [&](OpBuilder &nb, Location l,
                                                          ValueRange v) {
      Value positive =
          nb.create<arith::CmpFOp>(l, arith::CmpFPredicate::OGT, v[1], h.scalar(element, 0.0));
      return nb.create<arith::SelectOp>(l, positive, v[0], h.scalar(element, 0.0)).getResult();
    });
  Value meanC = h.perChannel(mean), invStdC = h.perChannel(invStd);
  Value xhat = h.elementwise(input, {x, meanC, invStdC}, [&](OpBuilder &nb, Location l,
                                                            ValueRange v) {
    return nb.create<arith::MulFOp>(l, nb.create<arith::SubFOp>(l, v[0], v[1]), v[2])
        .getResult();
  });
  Value dbeta = h.sum(dy);
  Value dgamma = h.sum(h.elementwise(input, {dy, xhat}, [&](OpBuilder &nb, Location l,
                                                           ValueRange v) {
    return nb.create<arith::MulFOp>(l, v[0], v[1]).getResult();
  }));
  Value dbetaAll = h.perChannel(h.overReplicas(dbeta));
  Value dgammaAll = h.perChannel(h.overReplicas(dgamma));
  Value dx = h.elementwise(
      input, {dy, xhat, h.perChannel(gamma), invStdC, dbetaAll, dgammaAll},
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value inverse = h.scalar(element, 1.0 / n);
        Value meanDy = nb.create<arith::MulFOp>(l, v[4], inverse);
        Value meanDyXhat = nb.create<arith::MulFOp>(l, v[5], inverse);
        Value centred = nb.create<arith::SubFOp>(
            l, nb.create<arith::SubFOp>(l, v[0], meanDy),
            nb.create<arith::MulFOp>(l, v[1], meanDyXhat));
        return nb.create<arith::MulFOp>(l, nb.create<arith::MulFOp>(l, v[2], v[3]), centred)
            .getResult();
      });
  op->getResult(0).replaceAllUsesWith(dx);
  op->getResult(1).replaceAllUsesWith(dgamma);
  op->getResult(2).replaceAllUsesWith(dbeta);
  op->erase();
  return success();
}

/// Inference with running statistics: one element-wise op,
/// (x - mean) / sqrt(variance + eps) * gamma + beta, as the evaluator's.
LogicalResult rewriteInference(BatchNormInferenceOp op, OpBuilder &b) {
  Builder h = Builder::at(b, op, op.getInput(), 1.0, {});
  Type element = h.input.getElementType();
  double epsilon = op.getEpsilon().convertToDouble();
  Value y = h.elementwise(
      h.input,
      {op.getInput(), h.perChannel(op.getMean()), h.perChannel(op.getVariance()),
       h.perChannel(op.getScale()), h.perChannel(op.getBias())},
      [&](OpBuilder &nb, Location l, ValueRange v) {
        Value d = nb.create<arith::SubFOp>(l, v[0], v[1]);
        Value spread = nb.create<math::SqrtOp>(
            l, nb.create<arith::AddFOp>(l, v[2], h.scalar(element, epsilon)));
        Value scaled = nb.create<arith::MulFOp>(l, nb.create<arith::DivFOp>(l, d, spread), v[3]);
        return nb.create<arith::AddFOp>(l, scaled, v[4]).getResult();
      });
  op.getResult().replaceAllUsesWith(y);
  op.erase();
  return success();
}

} // namespace

bool mlir::het::isDecomposableBatchNorm(Operation *op) {
  return isa<BatchNormOp, BatchNormReluOp, BatchNormGradOp, BatchNormReluGradOp,
             BatchNormInferenceOp>(op);
}

LogicalResult mlir::het::decomposeBatchNorm(Operation *op, double samples,
                                            CombinePartialSums combine) {
  return rewriteInheriting(op, [&](OpBuilder &b) -> LogicalResult {
    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](BatchNormOp) { return rewriteForward(op, false, samples, combine, b); })
        .Case([&](BatchNormReluOp) { return rewriteForward(op, true, samples, combine, b); })
        .Case([&](BatchNormGradOp) { return rewriteBackward(op, false, samples, combine, b); })
        .Case([&](BatchNormReluGradOp) { return rewriteBackward(op, true, samples, combine, b); })
        .Case([&](BatchNormInferenceOp inference) { return rewriteInference(inference, b); })
        .Default([](Operation *) { return failure(); });
  });
}

LogicalResult mlir::het::decomposeBatchNormOver(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isDecomposableBatchNorm(op))
      ops.push_back(op);
  });
  auto asIs = [](OpBuilder &, Location, Value partial) { return partial; };
  for (Operation *op : ops) {
    // The input of the forward, the x operand of a gradient: its batch.
    Value x = op->getOperand(isa<BatchNormReluGradOp>(op) ? 2 : isa<BatchNormGradOp>(op) ? 1 : 0);
    auto input = dyn_cast<RankedTensorType>(x.getType());
    if (!input || !input.hasStaticShape() || input.getRank() < 2)
      return op->emitOpError("needs a static [batch, channels, ...] input to be generated");
    if (failed(decomposeBatchNorm(op, double(input.getDimSize(0)), asIs)))
      return failure();
  }
  return success();
}
