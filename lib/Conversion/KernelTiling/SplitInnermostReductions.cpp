//===- SplitInnermostReductions.cpp - sums over the innermost dim as partial sums ===//
//
// A sum whose innermost loop is a reduction -- batch norm's per-channel
// statistics over [N, C, H, W] (and the fused sum of dy * x-hat in its
// backward), a bias gradient over images -- lowers to loops whose innermost
// statement adds into one scalar: a floating-point chain LLVM must not
// reassociate, so it is neither vectorized nor interleaved, and every add
// waits for the previous one (the CPU's add latency per element). In the
// generated CNN these sums took longer than its convolutions.
//
// Split, the same sum is two generics:
//
//   partial[c, w] = sum over (n, h) of f(x[n, c, h, w], ...)   w parallel, innermost
//   out[c]        = out[c] + sum over w of partial[c, w]
//
// The first has independent lanes along the contiguous innermost dimension
// (LLVM vectorizes it; where f is a product, het-tile-contractions tiles it
// like any other contraction) and the second is short. The kept parallel
// dimensions go outermost, so threads split the channels rather than
// joining once per image. This is a different summation order than the
// single loop's (and than het-eval's): a deterministic one, the same for
// every tiling and thread count, within rounding of the other.
//
// A sum with one reduction, innermost and long (a loss's sum of
// exponentials over a vocabulary, a softmax's or a norm's row sums), has no
// outer reduction to run the lanes along. Its row is split into blocks of
// kLanes instead, k = kk * kLanes + w (the inputs viewed [..., K / kLanes,
// kLanes], no copy):
//
//   partial[r, w] = sum over kk of f(x[r, kk, w])       w parallel, innermost
//   out[r]        = out[r] + sum over w of partial[r, w]
//
// so the exponentials of 16 lanes are one vector call, not 16 scalar ones.
//
// CPU lowering only: GPU builds map reductions onto blocks (BlockReductions.cpp).
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// Innermost reductions shorter than this stay one loop: too few lanes.
constexpr int64_t kMinInnermost = 8;
/// Elements of the partial sums, at most (16 MiB of f32): they live in a
/// temporary between the two generics.
constexpr int64_t kMaxPartial = int64_t(1) << 22;
/// A lone innermost reduction is split into blocks of this many lanes (one
/// AVX-512 vector of f32) where it is at least kMinRow long and a multiple.
constexpr int64_t kLanes = 16;
constexpr int64_t kMinRow = 128;

/// The body's add of the output (out + v or v + out, yielded, no fast-math
/// flags), or null when the body is not such a sum.
arith::AddFOp outputAdd(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArgument(op.getNumDpsInputs());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!out.hasOneUse() || yield.getNumOperands() != 1)
    return {};
  auto add = dyn_cast<arith::AddFOp>(*out.getUsers().begin());
  if (!add || yield.getOperand(0) != add.getResult() ||
      add.getFastmathAttr().getValue() != arith::FastMathFlags::none)
    return {};
  return add;
}

enum class Split { None, AlongInner, Row };

/// How splitting `op` helps and keeps it correct: a static f32 sum into
/// one output whose innermost loop is a reduction, read contiguously by the
/// inputs, either with another reduction outside it and partial sums much
/// smaller than the input (AlongInner), or alone and long (Row).
Split worthSplitting(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumResults() != 1 || !outputAdd(op))
    return Split::None;
  auto outType = dyn_cast<RankedTensorType>(op.getResult(0).getType());
  if (!outType || !outType.hasStaticShape() || !outType.getElementType().isF32())
    return Split::None;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned inner = iterators.size() - 1;
  if (iterators.empty() || iterators[inner] != utils::IteratorType::reduction ||
      ShapedType::isDynamic(ranges[inner]) || ranges[inner] < kMinInnermost)
    return Split::None;
  bool alone = llvm::count(iterators, utils::IteratorType::reduction) == 1;
  if (alone && (ranges[inner] < kMinRow || ranges[inner] % kLanes != 0))
    return Split::None;
  MLIRContext *context = op.getContext();
  AffineExpr innerDim = getAffineDimExpr(inner, context);
  bool read = false;
  int64_t largestInput = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type || !type.hasStaticShape())
      return Split::None;
    largestInput = std::max(largestInput, type.getNumElements());
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(inner))
      continue;
    // Only as the innermost index, exactly: contiguous lanes.
    ArrayRef<AffineExpr> results = map.getResults();
    if (results.back() != innerDim ||
        llvm::any_of(results.drop_back(), [&](AffineExpr e) { return e.isFunctionOfDim(inner); }))
      return Split::None;
    read = true;
  }
  // The output indexes by loop dimensions or constant 0 (kept unit dims).
  for (AffineExpr e : op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getResults()) {
    auto constant = dyn_cast<AffineConstantExpr>(e);
    if (!isa<AffineDimExpr>(e) && !(constant && constant.getValue() == 0))
      return Split::None;
  }
  if (!read)
    return Split::None;
  if (alone)
    return outType.getNumElements() * kLanes <= kMaxPartial ? Split::Row : Split::None;
  int64_t partial = outType.getNumElements() * ranges[inner];
  return partial <= kMaxPartial && partial * 4 <= largestInput ? Split::AlongInner : Split::None;
}

/// out + partial[..., w] over w in order, in place of `op`.
void sumPartials(RewriterBase &rewriter, linalg::GenericOp op, Value partials) {
  MLIRContext *context = op.getContext();
  auto outType = cast<RankedTensorType>(op.getResult(0).getType());
  unsigned rank = outType.getRank();
  SmallVector<utils::IteratorType> sumIterators(rank, utils::IteratorType::parallel);
  sumIterators.push_back(utils::IteratorType::reduction);
  SmallVector<AffineExpr> outDims;
  for (unsigned d = 0; d < rank; ++d)
    outDims.push_back(getAffineDimExpr(d, context));
  SmallVector<AffineMap> sumMaps{AffineMap::getMultiDimIdentityMap(rank + 1, context),
                                 AffineMap::get(rank + 1, 0, outDims, context)};
  bool outFirst =
      outputAdd(op).getLhs() == op.getRegion().front().getArgument(op.getNumDpsInputs());
  auto sum = rewriter.create<linalg::GenericOp>(
      op.getLoc(), TypeRange{outType}, ValueRange{partials}, op.getDpsInits(), sumMaps,
      sumIterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value added = outFirst ? b.create<arith::AddFOp>(l, args[1], args[0])
                               : b.create<arith::AddFOp>(l, args[0], args[1]);
        b.create<linalg::YieldOp>(l, added);
      });
  sum->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.replaceOp(op, sum.getResults());
}

/// Zeroed partial sums of `op`'s output shape with `lanes` more.
Value zeroPartials(RewriterBase &rewriter, linalg::GenericOp op, int64_t lanes) {
  Location loc = op.getLoc();
  auto outType = cast<RankedTensorType>(op.getResult(0).getType());
  SmallVector<int64_t> shape(outType.getShape());
  shape.push_back(lanes);
  Value empty = rewriter.create<tensor::EmptyOp>(loc, shape, outType.getElementType());
  Value zero = rewriter.create<arith::ConstantOp>(loc, rewriter.getF32FloatAttr(0.0f));
  return rewriter.create<linalg::FillOp>(loc, zero, empty).getResult(0);
}

/// Rewrites a lone long reduction into blocks of kLanes (file comment).
void splitRow(RewriterBase &rewriter, linalg::GenericOp op) {
  MLIRContext *context = op.getContext();
  Location loc = op.getLoc();
  unsigned loops = op.getNumLoops(), inner = loops - 1;
  int64_t blocks = op.getStaticLoopRanges()[inner] / kLanes;
  // Loops: the old ones with the innermost now kk (a reduction over the
  // blocks), then w (parallel, kLanes).
  AffineExpr kk = getAffineDimExpr(inner, context), w = getAffineDimExpr(loops, context);
  rewriter.setInsertionPoint(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    SmallVector<AffineExpr> results;
    for (AffineExpr e : map.getResults())
      results.push_back(e.shiftDims(loops, 0));
    Value value = input->get();
    if (map.isFunctionOfDim(inner)) {
      // Read as its innermost index only (worthSplitting): view it as
      // [..., blocks, kLanes].
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape().drop_back());
      shape.append({blocks, kLanes});
      SmallVector<ReassociationIndices> groups;
      for (int64_t d = 0; d + 1 < type.getRank(); ++d)
        groups.push_back({d});
      groups.push_back({type.getRank() - 1, type.getRank()});
      value = rewriter.create<tensor::ExpandShapeOp>(
          loc, RankedTensorType::get(shape, type.getElementType()), value, groups);
      results.back() = kk;
      results.push_back(w);
    }
    inputs.push_back(value);
    maps.push_back(AffineMap::get(loops + 1, 0, results, context));
  }
  SmallVector<AffineExpr> partialResults;
  for (AffineExpr e : op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getResults())
    partialResults.push_back(e.shiftDims(loops, 0));
  partialResults.push_back(w);
  maps.push_back(AffineMap::get(loops + 1, 0, partialResults, context));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::parallel);
  Value zeros = zeroPartials(rewriter, op, kLanes);
  auto partial = rewriter.create<linalg::GenericOp>(loc, TypeRange{zeros.getType()}, inputs,
                                                    ValueRange{zeros}, maps, iterators);
  rewriter.cloneRegionBefore(op.getRegion(), partial.getRegion(), partial.getRegion().end());
  partial->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  sumPartials(rewriter, op, partial.getResult(0));
}

/// Rewrites `op` into the partial sums and their sum (file comment).
void split(RewriterBase &rewriter, linalg::GenericOp op) {
  MLIRContext *context = op.getContext();
  Location loc = op.getLoc();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned loops = iterators.size(), inner = loops - 1;

  // New loop order: the parallel dimensions, the other reductions (both in
  // their order), the innermost. The sums over the reductions keep their
  // order; only which loop is outermost changes.
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < inner; ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      order.push_back(d);
  for (unsigned d = 0; d < inner; ++d)
    if (iterators[d] == utils::IteratorType::reduction)
      order.push_back(d);
  order.push_back(inner);
  SmallVector<AffineExpr> renamed(loops);
  SmallVector<utils::IteratorType> newIterators;
  for (auto [position, d] : llvm::enumerate(order)) {
    renamed[d] = getAffineDimExpr(position, context);
    newIterators.push_back(d == inner ? utils::IteratorType::parallel : iterators[d]);
  }
  auto rename = [&](AffineMap map) { return map.replaceDimsAndSymbols(renamed, {}, loops, 0); };

  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands())
    maps.push_back(rename(op.getMatchingIndexingMap(input)));
  AffineMap outMap = rename(op.getMatchingIndexingMap(op.getDpsInitOperand(0)));
  SmallVector<AffineExpr> partialResults(outMap.getResults());
  partialResults.push_back(renamed[inner]);
  maps.push_back(AffineMap::get(loops, 0, partialResults, context));

  rewriter.setInsertionPoint(op);
  Value zeros = zeroPartials(rewriter, op, op.getStaticLoopRanges()[inner]);
  auto partial = rewriter.create<linalg::GenericOp>(
      loc, TypeRange{zeros.getType()}, op.getDpsInputs(), ValueRange{zeros}, maps, newIterators);
  rewriter.cloneRegionBefore(op.getRegion(), partial.getRegion(), partial.getRegion().end());
  partial->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  sumPartials(rewriter, op, partial.getResult(0));
}

struct SplitInnermostReductionsPass
    : public PassWrapper<SplitInnermostReductionsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitInnermostReductionsPass)
  StringRef getArgument() const override { return "het-split-innermost-reductions"; }
  StringRef getDescription() const override {
    return "Sums whose innermost loop is a reduction (on tensors) become partial sums along "
           "it, vectorizable, then a short sum of them";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect, tensor::TensorDialect>();
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, Split>> sums;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op.hasPureTensorSemantics())
        return;
      if (Split how = worthSplitting(op); how != Split::None)
        sums.push_back({op, how});
    });
    IRRewriter rewriter(&getContext());
    for (auto [op, how] : sums) {
      if (how == Split::Row)
        splitRow(rewriter, op);
      else
        split(rewriter, op);
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createSplitInnermostReductionsPass() {
  return std::make_unique<SplitInnermostReductionsPass>();
}

void mlir::het::registerSplitInnermostReductionsPass() {
  PassRegistration<SplitInnermostReductionsPass>();
}
