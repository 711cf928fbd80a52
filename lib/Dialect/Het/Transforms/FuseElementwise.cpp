//===- FuseElementwise.cpp - chains of element-wise ops -> het.elementwise -===//
//
// A consumer absorbs a producer when both are element-wise, the producer's
// result has no other user, and it has exactly the consumer's result type
// (a value that is broadcast on use is not fused, so every element is still
// computed once). Repeated application grows one het.elementwise per chain.
// Primitive ops become scalar arith/math code with the same formulas the
// reference kernels use.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Fusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::het;

namespace {

bool isFusible(Operation *op) {
  if (!op || op->getNumResults() != 1)
    return false;
  return isa<AddOp, SubOp, MulOp, ReluOp, ReluGradOp, GeluOp, ElementwiseOp>(op);
}

/// The op's tensor operands, in the order its scalar form takes them.
SmallVector<Value> tensorInputs(Operation *op) {
  if (auto fused = dyn_cast<ElementwiseOp>(op))
    return llvm::to_vector(fused.getInputs());
  return llvm::to_vector(op->getOperands());
}

Value constant(OpBuilder &b, Location loc, Type type, double value) {
  return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, value));
}

/// Emits `op` on scalars `args` (one per tensorInputs entry) and returns the
/// scalar result.
Value emitScalar(OpBuilder &b, Operation *op, ArrayRef<Value> args) {
  Location loc = op->getLoc();
  Type type = args.front().getType();
  if (auto fused = dyn_cast<ElementwiseOp>(op)) {
    IRMapping mapping;
    Block &body = fused.getBody().front();
    mapping.map(body.getArguments(), args);
    for (Operation &inner : body.without_terminator())
      b.clone(inner, mapping);
    return mapping.lookup(cast<YieldOp>(body.getTerminator()).getValues().front());
  }
  if (isa<AddOp>(op))
    return b.create<arith::AddFOp>(loc, args[0], args[1]);
  if (isa<SubOp>(op))
    return b.create<arith::SubFOp>(loc, args[0], args[1]);
  if (isa<MulOp>(op))
    return b.create<arith::MulFOp>(loc, args[0], args[1]);
  if (isa<ReluOp>(op))
    return b.create<arith::MaximumFOp>(loc, args[0], constant(b, loc, type, 0.0));
  if (isa<ReluGradOp>(op)) {
    Value positive = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT, args[1],
                                             constant(b, loc, type, 0.0));
    return b.create<arith::SelectOp>(loc, positive, args[0], constant(b, loc, type, 0.0));
  }
  auto gelu = cast<GeluOp>(op);
  Value x = args[0];
  Value half = constant(b, loc, type, 0.5), one = constant(b, loc, type, 1.0);
  Value inner;
  if (gelu.getApproximate() == GeluApproximation::Tanh) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value cube = b.create<arith::MulFOp>(loc, b.create<arith::MulFOp>(loc, x, x), x);
    Value poly = b.create<arith::AddFOp>(
        loc, x, b.create<arith::MulFOp>(loc, constant(b, loc, type, 0.044715), cube));
    inner = b.create<math::TanhOp>(
        loc, b.create<arith::MulFOp>(loc, constant(b, loc, type, 0.7978845608028654), poly));
  } else {
    // 0.5 x (1 + erf(x / sqrt(2)))
    inner = b.create<math::ErfOp>(
        loc, b.create<arith::MulFOp>(loc, x, constant(b, loc, type, 0.7071067811865476)));
  }
  Value scaled = b.create<arith::MulFOp>(loc, half, x);
  return b.create<arith::MulFOp>(loc, scaled, b.create<arith::AddFOp>(loc, one, inner));
}

struct FuseElementwiseChain : RewritePattern {
  explicit FuseElementwiseChain(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *consumer,
                                PatternRewriter &rewriter) const override {
    if (!isFusible(consumer) || consumer->getParentOfType<ElementwiseOp>())
      return failure();
    auto resultType = cast<RankedTensorType>(consumer->getResult(0).getType());
    if (!resultType.hasStaticShape())
      return rewriter.notifyMatchFailure(consumer, "dynamic shapes are not fused");
    SmallVector<Value> consumerInputs = tensorInputs(consumer);
    Operation *producer = nullptr;
    unsigned producerSlot = 0;
    for (auto [index, input] : llvm::enumerate(consumerInputs)) {
      Operation *candidate = input.getDefiningOp();
      if (isFusible(candidate) && input.getType() == resultType && input.hasOneUse() &&
          candidate->getBlock() == consumer->getBlock()) {
        producer = candidate;
        producerSlot = index;
        break;
      }
    }
    if (!producer)
      return rewriter.notifyMatchFailure(consumer, "no single-use element-wise producer");

    // Inputs of the fused op: the producer's, then the consumer's others;
    // the same tensor twice becomes one input.
    SmallVector<Value> inputs;
    auto slotOf = [&](Value value) {
      auto it = llvm::find(inputs, value);
      if (it != inputs.end())
        return static_cast<unsigned>(it - inputs.begin());
      inputs.push_back(value);
      return static_cast<unsigned>(inputs.size() - 1);
    };
    SmallVector<unsigned> producerArgs, consumerArgs;
    for (Value value : tensorInputs(producer))
      producerArgs.push_back(slotOf(value));
    for (auto [index, value] : llvm::enumerate(consumerInputs))
      consumerArgs.push_back(index == producerSlot ? ~0u : slotOf(value));

    rewriter.setInsertionPoint(consumer);
    auto fused = rewriter.create<ElementwiseOp>(
        consumer->getLoc(), resultType, inputs,
        [&](OpBuilder &b, Location, ValueRange scalars) {
          SmallVector<Value> args;
          for (unsigned slot : producerArgs)
            args.push_back(scalars[slot]);
          Value produced = emitScalar(b, producer, args);
          args.clear();
          for (unsigned slot : consumerArgs)
            args.push_back(slot == ~0u ? produced : scalars[slot]);
          return emitScalar(b, consumer, args);
        });
    fused->setDiscardableAttrs(consumer->getDiscardableAttrDictionary());
    rewriter.replaceOp(consumer, fused.getResult());
    rewriter.eraseOp(producer);
    return success();
  }
};

} // namespace

void mlir::het::populateElementwiseFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseElementwiseChain>(patterns.getContext());
}
