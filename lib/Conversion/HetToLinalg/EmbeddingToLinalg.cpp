//===- EmbeddingToLinalg.cpp - table lookups as generated linalg ----------===//
//
// library=mlir (and so GPU builds): het.embedding as a gather -- one
// linalg.generic over the output [..., D] whose body reads row
// `indices[...]` of the table -- and het.embedding_grad in gather form too:
// each table element [v, d] sums dy[t, d] over the token positions t whose
// index is v (padding_idx's row stays zero). Every output element is
// computed by one thread without atomics; the cost is V * T * D, fine for
// the vocabularies the examples use, and the reason a scatter with atomics
// is the follow-up for large ones (docs/gpu.md). Indices are checked
// against the table on the host first (hetrt_check_indices), as the
// reference kernel does, since a gather would otherwise read out of bounds.
// A vocabulary-sharded table (tensor parallelism) stays with the reference
// kernels.
//
//===----------------------------------------------------------------------===//

#include "LinalgBuilders.h"
#include "Lowering.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::lowering;

namespace {

/// [d0, ..., dk] -> [d0 * ... * dk] (or with a trailing dimension kept).
Value flatten(OpBuilder &b, Location loc, Value tensor, bool keepLast) {
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t rank = type.getRank();
  ReassociationIndices all;
  for (int64_t i = 0; i < (keepLast ? rank - 1 : rank); ++i)
    all.push_back(i);
  SmallVector<ReassociationIndices> groups{all};
  if (keepLast)
    groups.push_back({rank - 1});
  if (all.size() == 1 && (keepLast ? rank == 2 : rank == 1))
    return tensor;
  return b.create<tensor::CollapseShapeOp>(loc, tensor, groups);
}

Value buildEmbedding(OpBuilder &b, Location loc, EmbeddingOp op) {
  Value table = op.getTable(), indices = op.getIndices();
  auto tableType = cast<RankedTensorType>(table.getType());
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  checkIndices(b, loc, op, indices, tableType.getDimSize(0));
  int64_t rank = resultType.getRank();
  MLIRContext *ctx = b.getContext();
  AffineMap out = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap index = AffineMap::get(rank, 0, out.getResults().drop_back(), ctx);
  Value init = b.create<tensor::EmptyOp>(loc, resultType.getShape(), resultType.getElementType());
  SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
  return buildGeneric(b, loc, {indices}, {index}, {init}, {out}, parallel,
                      [&](OpBuilder &nb, Location l, ValueRange a) {
                        Value row = nb.create<arith::IndexCastOp>(l, nb.getIndexType(), a[0]);
                        Value column = nb.create<linalg::IndexOp>(l, rank - 1);
                        return SmallVector<Value>{
                            nb.create<tensor::ExtractOp>(l, table, ValueRange{row, column})};
                      })[0];
}

Value buildEmbeddingGrad(OpBuilder &b, Location loc, EmbeddingGradOp op) {
  auto tableType = cast<RankedTensorType>(op.getResult().getType());
  Value tokens = flatten(b, loc, op.getIndices(), /*keepLast=*/false);  // [T]
  Value dy = flatten(b, loc, op.getGradOutput(), /*keepLast=*/true);    // [T, D]
  MLIRContext *ctx = b.getContext();
  // (v, d, t): v and d parallel, t a reduction.
  AffineExpr v = getAffineDimExpr(0, ctx), d = getAffineDimExpr(1, ctx),
             t = getAffineDimExpr(2, ctx);
  AffineMap tokenMap = AffineMap::get(3, 0, {t}, ctx);
  AffineMap gradMap = AffineMap::get(3, 0, {t, d}, ctx);
  AffineMap outMap = AffineMap::get(3, 0, {v, d}, ctx);
  Value zeros = filledTensor(b, loc, tableType.getShape(), tableType.getElementType(), 0.0);
  std::optional<int64_t> padding = op.getPaddingIdx();
  return buildGeneric(
      b, loc, {tokens, dy}, {tokenMap, gradMap}, {zeros}, {outMap},
      {utils::IteratorType::parallel, utils::IteratorType::parallel,
       utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value row = nb.create<arith::IndexCastOp>(l, nb.getI64Type(),
                                                  nb.create<linalg::IndexOp>(l, 0));
        Value hit = nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, a[0], row);
        if (padding) {
          Value pad = nb.create<arith::ConstantIntOp>(l, *padding, 64);
          Value notPad = nb.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, row, pad);
          hit = nb.create<arith::AndIOp>(l, hit, notPad);
        }
        Value sum = nb.create<arith::AddFOp>(l, a[2], a[1]);
        return SmallVector<Value>{nb.create<arith::SelectOp>(l, hit, sum, a[2])};
      })[0];
}

} // namespace

bool mlir::het::isEmbeddingGeneratedAsLinalg(Operation *op) {
  if (auto lookup = dyn_cast<EmbeddingOp>(op))
    return !lookup.getVocabShardAttr();
  if (auto grad = dyn_cast<EmbeddingGradOp>(op))
    return !grad.getVocabShardAttr();
  return false;
}

FailureOr<SmallVector<Value>> mlir::het::lowerEmbeddingToLinalg(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  if (auto lookup = dyn_cast<EmbeddingOp>(op))
    return SmallVector<Value>{buildEmbedding(b, loc, lookup)};
  return SmallVector<Value>{buildEmbeddingGrad(b, loc, cast<EmbeddingGradOp>(op))};
}
