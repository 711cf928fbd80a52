//===- AttentionDecomposition.cpp - het.attention as matmul, softmax, matmul ===//
//
// See include/het/Dialect/Het/Transforms/AttentionDecomposition.h. The
// gradient is het.matmul's and het.softmax's own rules spelled out for
// C = softmax(scale q k^T) v:
//   dv = p^T dC, dp = dC v^T, ds = softmax_grad(dp, p), dq = ds k, dk = ds^T q
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/Transforms/AttentionDecomposition.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// The key of a forward op: its operands and result, which its gradient
/// names too.
using AttentionKey = std::tuple<Value, Value, Value, Value>;

struct Decomposer {
  llvm::DenseMap<AttentionKey, Value> probabilitiesOf;

  static Value probabilities(OpBuilder &b, Operation *op, Value query, Value key,
                             FloatAttr scale, UnitAttr causal) {
    Location loc = op->getLoc();
    auto scores = b.create<MatmulOp>(loc, query, key, /*transpose_lhs=*/false,
                                     /*transpose_rhs=*/true);
    scores->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    auto softmax = b.create<SoftmaxOp>(loc, scores.getType(), scores.getResult(),
                                       b.getI64IntegerAttr(-1), scale, causal);
    softmax->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    return softmax.getResult();
  }

  void decompose(AttentionOp op) {
    OpBuilder b(op);
    Value p = probabilities(b, op, op.getQuery(), op.getKey(), op.getScaleAttr(),
                            op.getCausalAttr());
    auto output = b.create<MatmulOp>(op.getLoc(), p, op.getValue(), false, false);
    output->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    probabilitiesOf[{op.getQuery(), op.getKey(), op.getValue(), output.getResult()}] = p;
    op.getResult().replaceAllUsesWith(output.getResult());
    op.erase();
  }

  void decompose(AttentionGradOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto inherit = [&](Operation *built) {
      built->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      return built->getResult(0);
    };
    Value p = probabilitiesOf.lookup({op.getQuery(), op.getKey(), op.getValue(), op.getOutput()});
    if (!p)
      p = probabilities(b, op, op.getQuery(), op.getKey(), op.getScaleAttr(), op.getCausalAttr());
    Value dOutput = op.getGradOutput();
    Value dValue = inherit(b.create<MatmulOp>(loc, p, dOutput, true, false));
    Value dProbabilities = inherit(b.create<MatmulOp>(loc, dOutput, op.getValue(), false, true));
    Value dScores = inherit(b.create<SoftmaxGradOp>(loc, p.getType(), dProbabilities, p,
                                                    b.getI64IntegerAttr(-1), op.getScaleAttr()));
    Value dQuery = inherit(b.create<MatmulOp>(loc, dScores, op.getKey(), false, false));
    Value dKey = inherit(b.create<MatmulOp>(loc, dScores, op.getQuery(), true, false));
    op.getGradQuery().replaceAllUsesWith(dQuery);
    op.getGradKey().replaceAllUsesWith(dKey);
    op.getGradValue().replaceAllUsesWith(dValue);
    op.erase();
  }
};

} // namespace

LogicalResult mlir::het::decomposeAttentionOver(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<AttentionOp, AttentionGradOp>(op))
      ops.push_back(op);
  });
  // A walk visits a block's ops in order: a forward op before its gradient.
  Decomposer decomposer;
  for (Operation *op : ops) {
    if (auto forward = dyn_cast<AttentionOp>(op))
      decomposer.decompose(forward);
    else
      decomposer.decompose(cast<AttentionGradOp>(op));
  }
  return success();
}
