//===- FuseLinearActivation.cpp - linear + bias + activation ---------------===//
//
// Two steps that compose: a matmul by a [out, in] weight plus a bias add
// becomes het.linear; a het.linear followed by relu/gelu takes the
// activation. In a training step the pre-activation also feeds the
// activation's gradient. For relu that gradient can read the fused output
// instead (same mask); gelu's gradient needs the pre-activation itself, so a
// linear whose pre-activation feeds gelu_grad is left alone.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Fusion.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// add(matmul(x, W^T), b) with a 1-D bias over the last dimension.
struct FuseMatmulBias : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      Value product = side == 0 ? add.getLhs() : add.getRhs();
      Value bias = side == 0 ? add.getRhs() : add.getLhs();
      auto matmul = product.getDefiningOp<MatmulOp>();
      if (!matmul || !matmul.getTransposeRhs() || matmul.getTransposeLhs() ||
          !matmul.getResult().hasOneUse())
        continue;
      auto weight = cast<RankedTensorType>(matmul.getRhs().getType());
      auto biasType = cast<RankedTensorType>(bias.getType());
      auto result = cast<RankedTensorType>(add.getType());
      if (weight.getRank() != 2 || biasType.getRank() != 1 ||
          result != matmul.getResult().getType() ||
          biasType.getDimSize(0) != weight.getDimSize(0))
        continue;
      auto linear = rewriter.create<LinearOp>(add.getLoc(), matmul.getLhs(), matmul.getRhs(),
                                              bias, Activation::None);
      linear->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
      rewriter.replaceOp(add, linear.getResult());
      rewriter.eraseOp(matmul);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not matmul(x, W^T) + bias");
  }
};

template <typename ActivationOp>
struct FuseLinearActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern<ActivationOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ActivationOp activation,
                                PatternRewriter &rewriter) const override {
    constexpr bool isRelu = std::is_same_v<ActivationOp, ReluOp>;
    auto linear = activation.getInput().template getDefiningOp<LinearOp>();
    if (!linear || linear.getActivation() != Activation::None)
      return rewriter.notifyMatchFailure(activation, "input is not a plain het.linear");
    if constexpr (!isRelu)
      if (activation.getApproximate() != GeluApproximation::None)
        return rewriter.notifyMatchFailure(activation, "fused linear uses the exact gelu");
    SmallVector<ReluGradOp> reluGrads;
    for (OpOperand &use : linear.getResult().getUses()) {
      if (use.getOwner() == activation.getOperation())
        continue;
      auto rg = dyn_cast<ReluGradOp>(use.getOwner());
      if (!isRelu || !rg || use.get() != rg.getInput() ||
          rg.getGradOutput() == linear.getResult())
        return rewriter.notifyMatchFailure(activation,
                                           "pre-activation has another user");
      reluGrads.push_back(rg);
    }
    auto fused = rewriter.create<LinearOp>(linear.getLoc(), linear.getInput(),
                                           linear.getWeight(), linear.getBias(),
                                           isRelu ? Activation::ReLU : Activation::GELU);
    fused->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
    for (ReluGradOp rg : reluGrads)
      rewriter.modifyOpInPlace(rg, [&] { rg.getInputMutable().assign(fused.getResult()); });
    rewriter.replaceOp(activation, fused.getResult());
    rewriter.eraseOp(linear);
    return success();
  }
};

} // namespace

void mlir::het::populateLinearActivationFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseMatmulBias, FuseLinearActivation<ReluOp>, FuseLinearActivation<GeluOp>>(
      patterns.getContext());
}
