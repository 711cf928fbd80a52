//===- FuseAttention.cpp - matmul + softmax + matmul into het.attention -----===//
//
// Runs on the forward model, before het-autodiff, so that the gradient comes
// from het.attention's own rule (het.attention_grad recomputes the
// probabilities) rather than from the three ops' rules, which keep them.
// The intermediate scores and probabilities must have no other user: if
// anything else reads them they exist anyway and the ops stay as they are.
//
// Imported models (transformers' GPT-2, anything written with torch.bmm)
// multiply in [batch * heads, T, D] and take the softmax in [batch, heads,
// T, T]: reshapes that only regroup the leading dimensions around the
// softmax are looked through, and a key transposed before such a reshape
// is regrouped the same way, so the fused op works in the matmuls' frame.
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

/// True when `reshape` keeps its input's last two dimensions and so only
/// regroups the leading (batch) ones.
bool regroupsLeading(ReshapeOp reshape) {
  RankedTensorType from = typeOf(reshape.getInput()), to = typeOf(reshape.getResult());
  if (from.getRank() < 2 || to.getRank() < 2 || !from.hasStaticShape() || !to.hasStaticShape())
    return false;
  return from.getShape().take_back(2) == to.getShape().take_back(2);
}

/// `value` itself, or the input of a one-use reshape that regroups leading
/// dimensions into it (with that reshape in `view`).
Value throughLeadingReshape(Value value, ReshapeOp &view) {
  view = value.getDefiningOp<ReshapeOp>();
  if (view && view.getResult().hasOneUse() && regroupsLeading(view))
    return view.getInput();
  view = nullptr;
  return value;
}

/// One match: scores = q @ k^T -> probabilities = softmax(scores) -> p @ v,
/// with optional leading-dimension reshapes around the softmax.
struct AttentionMatch {
  MatmulOp scores;
  ReshapeOp scoresView;        // scores -> the softmax's shape, or null
  SoftmaxOp probabilities;
  ReshapeOp probabilitiesView; // the softmax's shape -> the matmul's, or null
  MatmulOp output;
  Value query, value;
  Value key;                   // [..., K, D] in the matmuls' frame, or null:
  Value keyToRegroup;          // then this transposed key is reshaped to it
};

std::optional<AttentionMatch> match(MatmulOp output) {
  if (output.getTransposeLhs() || output.getTransposeRhs())
    return std::nullopt;
  AttentionMatch m;
  auto softmax = throughLeadingReshape(output.getLhs(), m.probabilitiesView).getDefiningOp<SoftmaxOp>();
  if (!softmax || !softmax.getResult().hasOneUse())
    return std::nullopt;
  int64_t softmaxRank = typeOf(softmax.getResult()).getRank();
  if (softmax.getAxis() != -1 && softmax.getAxis() != softmaxRank - 1)
    return std::nullopt;
  auto scores = throughLeadingReshape(softmax.getInput(), m.scoresView).getDefiningOp<MatmulOp>();
  if (!scores || !scores.getResult().hasOneUse() || scores.getTransposeLhs())
    return std::nullopt;
  // Regrouped there and back: the probabilities multiply v in the scores' frame.
  if (typeOf(scores.getResult()) != typeOf(output.getLhs()))
    return std::nullopt;

  RankedTensorType q = typeOf(scores.getLhs());
  int64_t rank = q.getRank();
  if (scores.getTransposeRhs()) {
    m.key = scores.getRhs();
  } else if (auto transpose = scores.getRhs().getDefiningOp<TransposeOp>();
             transpose && swapsLastTwo(transpose)) {
    m.key = transpose.getInput();
  } else if (auto view = scores.getRhs().getDefiningOp<ReshapeOp>(); view && regroupsLeading(view)) {
    auto transpose = view.getInput().getDefiningOp<TransposeOp>();
    if (!transpose || !swapsLastTwo(transpose))
      return std::nullopt;
    m.keyToRegroup = transpose.getInput();
  } else {
    return std::nullopt;
  }

  m.query = scores.getLhs();
  m.value = output.getRhs();
  // Every operand batched the same way (a plain-matrix right operand shared
  // by a batch is not attention), one element type.
  RankedTensorType kT = typeOf(scores.getRhs()), v = typeOf(m.value);
  if (kT.getRank() != rank || v.getRank() != rank ||
      q.getElementType() != kT.getElementType() || q.getElementType() != v.getElementType())
    return std::nullopt;
  if (m.key && typeOf(m.key).getRank() != rank)
    return std::nullopt;
  for (int64_t d = 0; d + 2 < rank; ++d)
    if (q.getDimSize(d) != kT.getDimSize(d) || q.getDimSize(d) != v.getDimSize(d) ||
        ShapedType::isDynamic(q.getDimSize(d)))
      return std::nullopt;
  m.scores = scores;
  m.probabilities = softmax;
  m.output = output;
  return m;
}

/// Erases `op` when nothing reads its result any more.
void eraseIfUnused(Operation *op) {
  if (op && op->use_empty())
    op->erase();
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
      Location loc = m.output.getLoc();
      Value key = m.key;
      if (!key) {
        // k^T was transposed as [batch, heads, D, K] and then regrouped:
        // regroup k itself, [batch, heads, K, D] -> [batch * heads, K, D].
        RankedTensorType kT = typeOf(m.scores.getRhs());
        SmallVector<int64_t> shape(kT.getShape());
        std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
        key = b.create<ReshapeOp>(loc, RankedTensorType::get(shape, kT.getElementType()),
                                  m.keyToRegroup);
        key.getDefiningOp()->setDiscardableAttrs(m.scores->getDiscardableAttrDictionary());
      }
      auto fused = b.create<AttentionOp>(loc, m.query, key, m.value,
                                         m.probabilities.getScaleAttr(),
                                         m.probabilities.getCausalAttr());
      // The layer (het.layer) and any placement are the output matmul's.
      fused->setDiscardableAttrs(m.output->getDiscardableAttrDictionary());
      m.output.getResult().replaceAllUsesWith(fused.getResult());
      Value transposedKey = m.scores.getRhs();
      m.output.erase();
      eraseIfUnused(m.probabilitiesView);
      m.probabilities.erase();
      eraseIfUnused(m.scoresView);
      m.scores.erase();
      Operation *keyOp = transposedKey.getDefiningOp();
      if (auto view = dyn_cast_or_null<ReshapeOp>(keyOp); view && view.getResult().use_empty()) {
        keyOp = view.getInput().getDefiningOp();
        view.erase();
      }
      if (auto transpose = dyn_cast_or_null<TransposeOp>(keyOp))
        eraseIfUnused(transpose);
    }
  }
};

} // namespace
