//===- FoldConvBatchNorm.cpp - conv2d + batch_norm_inference -> conv2d -----===//
//
// With s = gamma / sqrt(var + eps) per output channel,
//   bn(conv(x, W) + b) = conv(x, W * s) + (beta + (b - mean) * s).
// The new filter and bias are computed in the IR from the parameters (not
// folded into constants), so the rewrite is exact for any values and works
// on functions whose parameters are arguments.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Fusion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// A het.elementwise over same-shaped vectors whose body `build` writes.
Value vectorElementwise(PatternRewriter &rewriter, Location loc, ValueRange inputs,
                        function_ref<Value(OpBuilder &, ValueRange)> build) {
  return rewriter.create<ElementwiseOp>(
      loc, inputs.front().getType(), inputs,
      [&](OpBuilder &b, Location, ValueRange args) { return build(b, args); });
}

struct FoldConvBatchNorm : OpRewritePattern<BatchNormInferenceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormInferenceOp bn,
                                PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<Conv2dOp>();
    if (!conv || !conv.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(bn, "input is not a single-use het.conv2d");
    auto channels = cast<RankedTensorType>(bn.getScale().getType());
    if (channels.getRank() != 1 || channels.isDynamicDim(0))
      return rewriter.notifyMatchFailure(bn, "channel count must be static");
    Location loc = bn.getLoc();
    Type element = channels.getElementType();
    double epsilon = bn.getEpsilon().convertToDouble();
    rewriter.setInsertionPoint(bn);

    // s = gamma * rsqrt(var + eps)
    Value scale = vectorElementwise(
        rewriter, loc, {bn.getScale(), bn.getVariance()},
        [&](OpBuilder &b, ValueRange a) -> Value {
          Value eps = b.create<arith::ConstantOp>(loc, b.getFloatAttr(element, epsilon));
          Value root = b.create<math::RsqrtOp>(loc, b.create<arith::AddFOp>(loc, a[1], eps));
          return b.create<arith::MulFOp>(loc, a[0], root);
        });
    // beta + (b - mean) * s, with b = 0 for a conv without bias.
    SmallVector<Value> biasInputs{bn.getBias(), bn.getMean(), scale};
    if (conv.getBias())
      biasInputs.push_back(conv.getBias());
    Value bias = vectorElementwise(
        rewriter, loc, biasInputs, [&](OpBuilder &b, ValueRange a) -> Value {
          Value centered = a.size() == 4 ? Value(b.create<arith::SubFOp>(loc, a[3], a[1]))
                                         : Value(b.create<arith::NegFOp>(loc, a[1]));
          return b.create<arith::AddFOp>(loc, a[0],
                                         b.create<arith::MulFOp>(loc, centered, a[2]));
        });
    // W * s, with s as [O, 1, 1, 1].
    auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
    Value column = rewriter.create<ReshapeOp>(
        loc, RankedTensorType::get({channels.getDimSize(0), 1, 1, 1}, element), scale);
    Value filter = rewriter.create<MulOp>(loc, filterType, conv.getFilter(), column);

    auto folded = rewriter.create<Conv2dOp>(
        conv.getLoc(), conv.getType(), conv.getInput(), filter, bias, conv.getStridesAttr(),
        conv.getPaddingAttr(), conv.getDilationAttr(), conv.getGroupsAttr());
    folded->setDiscardableAttrs(conv->getDiscardableAttrDictionary());
    for (Operation *op : {scale.getDefiningOp(), bias.getDefiningOp(), column.getDefiningOp(),
                          filter.getDefiningOp()})
      op->setDiscardableAttrs(conv->getDiscardableAttrDictionary());
    rewriter.replaceOp(bn, folded.getResult());
    rewriter.eraseOp(conv);
    return success();
  }
};

} // namespace

void mlir::het::populateConvBatchNormFoldingPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldConvBatchNorm>(patterns.getContext());
}
