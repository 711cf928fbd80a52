//===- FuseBatchNormRelu.cpp - batch_norm + relu, forward and backward -----===//
//
// In a forward function the batch norm's output must feed only the relu. In
// a training step it also feeds the relu's gradient, whose result must feed
// only batch_norm_grad ops of this very batch norm: then the pair becomes
// batch_norm_relu_grad, which recovers the mask from the fused op's output
// (relu(z) > 0 exactly where z > 0), so the pre-relu tensor never exists.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Fusion.h"

using namespace mlir;
using namespace mlir::het;

namespace {

struct FuseBatchNormRelu : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp bn, PatternRewriter &rewriter) const override {
    ReluOp relu;
    SmallVector<ReluGradOp> reluGrads;
    SmallVector<BatchNormGradOp> bnGrads;
    for (OpOperand &use : bn.getOutput().getUses()) {
      Operation *user = use.getOwner();
      if (auto r = dyn_cast<ReluOp>(user)) {
        if (relu)
          return rewriter.notifyMatchFailure(bn, "output feeds two relus");
        relu = r;
      } else if (auto rg = dyn_cast<ReluGradOp>(user);
                 rg && use.get() == rg.getInput() && rg.getGradOutput() != bn.getOutput()) {
        reluGrads.push_back(rg);
      } else {
        return rewriter.notifyMatchFailure(bn, "output has a user besides relu/relu_grad");
      }
    }
    if (!relu)
      return rewriter.notifyMatchFailure(bn, "output does not feed a relu");
    for (ReluGradOp rg : reluGrads)
      for (Operation *user : rg.getResult().getUsers()) {
        auto grad = dyn_cast<BatchNormGradOp>(user);
        if (!grad || grad.getGradOutput() != rg.getResult() ||
            grad.getInput() != bn.getInput() || grad.getSavedMean() != bn.getSavedMean() ||
            grad.getSavedInvStd() != bn.getSavedInvStd() || grad.getScale() != bn.getScale())
          return rewriter.notifyMatchFailure(
              bn, "relu gradient feeds something other than this batch norm's gradient");
        bnGrads.push_back(grad);
      }

    rewriter.setInsertionPoint(bn);
    auto fused = rewriter.create<BatchNormReluOp>(bn.getLoc(), bn.getInput(), bn.getScale(),
                                                  bn.getBias(), bn.getEpsilonAttr());
    fused->setDiscardableAttrs(bn->getDiscardableAttrDictionary());
    for (BatchNormGradOp grad : bnGrads) {
      auto rg = grad.getGradOutput().getDefiningOp<ReluGradOp>();
      rewriter.setInsertionPoint(grad);
      auto fusedGrad = rewriter.create<BatchNormReluGradOp>(
          grad.getLoc(), rg.getGradOutput(), fused.getOutput(), grad.getInput(),
          grad.getScale(), fused.getSavedMean(), fused.getSavedInvStd());
      fusedGrad->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
      rewriter.replaceOp(grad, fusedGrad->getResults());
    }
    for (ReluGradOp rg : reluGrads)
      if (rg->use_empty())
        rewriter.eraseOp(rg);
    rewriter.replaceOp(relu, fused.getOutput());
    rewriter.replaceOp(bn, fused->getResults());
    return success();
  }
};

} // namespace

void mlir::het::populateBatchNormReluFusionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseBatchNormRelu>(patterns.getContext());
}
