//===- HetFolds.cpp - folders and canonicalization of compute ops ---------===//

#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::het;

/// relu is idempotent: relu(relu(x)) = relu(x).
OpFoldResult ReluOp::fold(FoldAdaptor) {
  if (auto inner = getInput().getDefiningOp<ReluOp>())
    return inner.getResult();
  return {};
}

OpFoldResult SumToShapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

/// Whether converting `from` to `to` loses nothing (every value of `from`
/// is one of `to`): f16 and bf16 to f32 or f64, f32 to f64, a type to itself.
static bool isExactConversion(Type from, Type to) {
  auto a = cast<FloatType>(from), b = cast<FloatType>(to);
  if (a == b)
    return true;
  if (a.getWidth() >= b.getWidth())
    return false;
  // f16 has more mantissa bits than bf16 and bf16 more exponent range than
  // f16: neither holds the other; everything 16-bit fits f32.
  return !(a.isF16() && b.isBF16()) && !(a.isBF16() && b.isF16());
}

/// A cast to the same type is a no-op; a cast of an exact (widening) cast
/// reads the original: cast(cast(x, f32), bf16) = cast(x, bf16) and
/// cast(cast(x, f32), type(x)) = x.
OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    // What a stage of replicas in several formats sends stays f32.
    if (inner->hasAttr(kF32BoundaryAttrName))
      return {};
    Type original = getElementTypeOrSelf(inner.getInput().getType());
    if (isExactConversion(original, getElementTypeOrSelf(inner.getResult().getType()))) {
      if (inner.getInput().getType() == getResult().getType())
        return inner.getInput();
      getInputMutable().assign(inner.getInput());
      return getResult();
    }
  }
  return {};
}

/// A reshape to the same type is a no-op; a reshape of a reshape only needs
/// the first input (row-major order is preserved by both).
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  return {};
}

/// Identity permutations vanish; two transposes compose into one.
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    // result[i] = x_inner_result[perm[i]] = x[innerPerm[perm[i]]]
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return getInput();
    return getResult();
  }
  return {};
}

/// A transfer to the kind the tensor is already on moves nothing.
OpFoldResult TransferOp::fold(FoldAdaptor) {
  if (getSource() == getTarget())
    return getInput();
  return {};
}

namespace {
/// transfer(transfer(x, a -> b), b -> c) moves x from a to c directly; the
/// intermediate copy on b is dead if nothing else uses it.
struct ComposeTransfers : OpRewritePattern<TransferOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransferOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransferOp>();
    if (!inner || inner.getTarget() != op.getSource())
      return failure();
    rewriter.replaceOpWithNewOp<TransferOp>(op, op.getType(), inner.getInput(),
                                            inner.getSource(), op.getTarget());
    return success();
  }
};
} // namespace

void TransferOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<ComposeTransfers>(context);
}
