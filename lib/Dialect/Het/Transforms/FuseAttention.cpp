//===- FuseAttention.cpp - matmul + softmax + matmul into het.attention -----===//
//
// Runs on the forward model, before het-autodiff, so that the gradient comes
// from het.attention's own rule (het.attention_grad recomputes the
// probabilities) rather than from the three ops' rules, which keep them.
// The intermediate scores and probabilities must have no other user: if
// anything else reads them they exist anyway and the ops stay as they are.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETFUSEATTENTION
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {

RankedTensorType typeOf(Value value) { return cast<RankedTensorType>(value.getType()); }

/// True when `transpose` swaps exactly the last two dimensions.
bool swapsLastTwo(TransposeOp transpose) {
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  int64_t rank = static_cast<int64_t>(permutation.size());
  if (rank < 2)
    return false;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (permutation[d] != d)
      return false;
  return permutation[rank - 2] == rank - 1 && permutation[rank - 1] == rank - 2;
}

/// One match: scores = q @ k^T -> probabilities = softmax(scores) -> p @ v.
struct AttentionMatch {
  MatmulOp scores;
  SoftmaxOp probabilities;
  MatmulOp output;
  Value query, key, value;
};

std::optional<AttentionMatch> match(MatmulOp output) {
  if (output.getTransposeLhs() || output.getTransposeRhs())
    return std::nullopt;
  auto softmax = output.getLhs().getDefiningOp<SoftmaxOp>();
  if (!softmax || !softmax.getResult().hasOneUse())
    return std::nullopt;
  int64_t rank = typeOf(softmax.getResult()).getRank();
  if (softmax.getAxis() != -1 && softmax.getAxis() != rank - 1)
    return std::nullopt;
  auto scores = softmax.getInput().getDefiningOp<MatmulOp>();
  if (!scores || !scores.getResult().hasOneUse() || scores.getTransposeLhs())
    return std::nullopt;
  Value key;
  if (scores.getTransposeRhs())
    key = scores.getRhs();
  else if (auto transpose = scores.getRhs().getDefiningOp<TransposeOp>();
           transpose && swapsLastTwo(transpose))
    key = transpose.getInput();
  else
    return std::nullopt;

  Value query = scores.getLhs(), value = output.getRhs();
  // Every operand batched the same way (a plain-matrix right operand shared
  // by a batch is not attention), one element type.
  RankedTensorType q = typeOf(query), k = typeOf(key), v = typeOf(value);
  if (k.getRank() != rank || q.getRank() != rank || v.getRank() != rank ||
      q.getElementType() != k.getElementType() || q.getElementType() != v.getElementType())
    return std::nullopt;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (q.getDimSize(d) != k.getDimSize(d) || q.getDimSize(d) != v.getDimSize(d) ||
        ShapedType::isDynamic(q.getDimSize(d)))
      return std::nullopt;
  return AttentionMatch{scores, softmax, output, query, key, value};
}

struct FuseAttentionPass : mlir::het::impl::HetFuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionMatch> matches;
    getOperation().walk([&](MatmulOp output) {
      if (auto m = match(output))
        matches.push_back(*m);
    });
    for (AttentionMatch &m : matches) {
      OpBuilder b(m.output);
      auto fused = b.create<AttentionOp>(m.output.getLoc(), m.query, m.key, m.value,
                                         m.probabilities.getScaleAttr(),
                                         m.probabilities.getCausalAttr());
      // The layer (het.layer) and any placement are the output matmul's.
      fused->setDiscardableAttrs(m.output->getDiscardableAttrDictionary());
      m.output.getResult().replaceAllUsesWith(fused.getResult());
      Value transposedKey = m.scores.getRhs();
      m.output.erase();
      m.probabilities.erase();
      m.scores.erase();
      if (auto transpose = transposedKey.getDefiningOp<TransposeOp>();
          transpose && transpose.getResult().use_empty())
        transpose.erase();
    }
  }
};

} // namespace
