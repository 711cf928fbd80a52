//===- HetCollectives.cpp - collective verification and canonicalization --===//
//
// Local checks (attributes, compression rules) are in verify(); anything that
// depends on the group size is in verifySymbolUses, since the size comes from
// the stage or device group the op names.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::het;

FailureOr<int64_t> mlir::het::resolveGroupSize(Operation *op,
                                               SymbolRefAttr group,
                                               SymbolTableCollection &symbolTable) {
  Operation *target = symbolTable.lookupNearestSymbolFrom(op, group);
  if (auto stage = dyn_cast_or_null<StageOp>(target))
    return stage.getReplicas();
  if (auto devices = dyn_cast_or_null<DeviceGroupOp>(target))
    return devices.getCount();
  if (auto tensorParallel = dyn_cast_or_null<TensorParallelGroupOp>(target))
    return tensorParallel.getSize();
  if (auto tied = dyn_cast_or_null<TiedGroupOp>(target)) {
    // Every rank of the stages holding a copy of the parameter.
    int64_t ranks = 0;
    for (Attribute name : tied.getStages()) {
      auto stage = symbolTable.lookupNearestSymbolFrom<StageOp>(tied, cast<FlatSymbolRefAttr>(name));
      if (!stage)
        return failure();
      ranks += stage.getReplicas() * stage.getTensorParallel();
    }
    return ranks;
  }
  if (isa_and_nonnull<ClusterOp>(target)) {
    // Every rank working for the job: each stage's replicas and devices.
    int64_t ranks = 0;
    if (auto module = target->getParentOfType<ModuleOp>())
      for (auto stage : module.getOps<StageOp>())
        ranks += stage.getReplicas() * stage.getTensorParallel();
    return ranks;
  }
  return failure();
}

namespace {

bool isFloatTensor(Value value) {
  return isa<FloatType>(cast<RankedTensorType>(value.getType()).getElementType());
}

/// Rules shared by every collective: element types agree, and the
/// compression scheme fits the data and the reduction.
LogicalResult verifyCollectiveCommon(Operation *op, Value input, Value result,
                                     CompressionKind compression,
                                     std::optional<APFloat> topkRatio,
                                     std::optional<ReductionKind> reduction) {
  auto inType = cast<RankedTensorType>(input.getType());
  auto outType = cast<RankedTensorType>(result.getType());
  if (inType.getElementType() != outType.getElementType())
    return op->emitOpError("result element type ")
           << outType.getElementType() << " differs from the input's "
           << inType.getElementType();
  if (compression != CompressionKind::None && !isFloatTensor(input))
    return op->emitOpError("compression '")
           << stringifyCompressionKind(compression)
           << "' needs a floating-point tensor, got " << inType.getElementType();
  bool sparsifying =
      compression == CompressionKind::Int8 || compression == CompressionKind::TopK;
  if (sparsifying && reduction && *reduction != ReductionKind::Sum &&
      *reduction != ReductionKind::Avg)
    return op->emitOpError("compression '")
           << stringifyCompressionKind(compression)
           << "' is only defined for sum and avg reductions, got '"
           << stringifyReductionKind(*reduction) << "'";
  if (compression == CompressionKind::TopK && !reduction)
    return op->emitOpError("compression 'topk' needs a reduction "
                           "(all_reduce or reduce_scatter)");
  if (compression == CompressionKind::TopK && !topkRatio)
    return op->emitOpError("compression 'topk' needs a ratio: topk(0.01)");
  if (compression != CompressionKind::TopK && topkRatio)
    return op->emitOpError("has a top-k ratio but compression is '")
           << stringifyCompressionKind(compression) << "'";
  if (topkRatio) {
    double ratio = topkRatio->convertToDouble();
    if (!(ratio > 0.0 && ratio <= 1.0))
      return op->emitOpError("top-k ratio must be in (0, 1], got ") << ratio;
  }
  return success();
}

/// Resolves the group, or reports what the symbol is instead.
FailureOr<int64_t> groupSizeOrError(Operation *op, SymbolRefAttr group,
                                    SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> size = resolveGroupSize(op, group, symbolTable);
  if (failed(size)) {
    op->emitOpError("is over ")
        << group
        << ", which is neither a het.stage, a het.device_group, a het.tensor_parallel_group, a "
           "het.tied_group nor a het.cluster";
    return size;
  }
  // Inside a stage, a tensor-parallel collective is among the devices of one
  // replica, so the group must be as large as the stage's split.
  auto stage = op->getParentOfType<StageOp>();
  if (stage && isa<TensorParallelGroupOp>(symbolTable.lookupNearestSymbolFrom(op, group)) &&
      *size != stage.getTensorParallel()) {
    op->emitOpError("is over tensor-parallel group ")
        << group << " of " << *size << " devices, but stage @" << stage.getSymName()
        << " splits each replica over " << stage.getTensorParallel();
    return failure();
  }
  return size;
}

/// Shape-changing collectives keep the rank, and their axes must exist.
LogicalResult checkRankAndAxes(Operation *op, Value input, Value result,
                               ArrayRef<std::pair<StringRef, int64_t>> axes) {
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t resultRank = cast<RankedTensorType>(result.getType()).getRank();
  if (rank != resultRank)
    return op->emitOpError("result rank ")
           << resultRank << " differs from the input rank " << rank;
  for (auto [name, axis] : axes)
    if (axis < 0 || axis >= rank)
      return op->emitOpError("'") << name << "' " << axis
                                  << " is out of range for rank " << rank;
  return success();
}

/// A collective over a single member returns its own input unchanged: the
/// reduction of one value is that value (avg divides by 1), a gather or
/// scatter of one part is the whole.
template <typename OpTy>
struct DropSingleMemberCollective : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    SymbolTableCollection symbolTable;
    FailureOr<int64_t> size =
        resolveGroupSize(op, op.getGroupAttr(), symbolTable);
    if (failed(size) || *size != 1 ||
        op.getInput().getType() != op.getResult().getType())
      return failure();
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// all_reduce
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type ") << getResult().getType()
           << " must equal the input type " << getInput().getType();
  return verifyCollectiveCommon(*this, getInput(), getResult(), getCompression(),
                                getTopkRatio(), getReduction());
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return failure(failed(groupSizeOrError(*this, getGroupAttr(), symbolTable)));
}

void AllReduceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropSingleMemberCollective<AllReduceOp>>(context);
}

/// A block by batch share (reduce_scatter/all_gather by_share, het.shard):
/// over a stage's replicas, along axis 0, at most as long as the whole and
/// as wide in every other dimension. `whole` and `block` are the two types.
static LogicalResult verifyShareBlock(Operation *op, SymbolRefAttr group, int64_t axis,
                                      RankedTensorType whole, RankedTensorType block,
                                      SymbolTableCollection &symbolTable) {
  if (!isa_and_nonnull<StageOp>(symbolTable.lookupNearestSymbolFrom(op, group)))
    return op->emitOpError("splits by batch share, which needs a stage's replicas as the group, "
                           "not ")
           << group;
  if (axis != 0)
    return op->emitOpError("splits by batch share along axis 0 only, got axis ") << axis;
  if (whole.getRank() < 1 || whole.getRank() != block.getRank())
    return op->emitOpError("needs tensors of one rank of at least 1");
  for (int64_t d = 0; d < whole.getRank(); ++d) {
    int64_t a = whole.getDimSize(d), b = block.getDimSize(d);
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
      continue;
    if (d == 0 ? b > a || b < 0 : a != b)
      return op->emitOpError("block dimension ")
             << d << " must be " << (d == 0 ? "at most " : "") << a << ", got " << b;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// reduce_scatter
//===----------------------------------------------------------------------===//

LogicalResult ReduceScatterOp::verify() {
  if (failed(checkRankAndAxes(*this, getInput(), getResult(),
                              {{"axis", getAxis()}})))
    return failure();
  return verifyCollectiveCommon(*this, getInput(), getResult(), getCompression(),
                                getTopkRatio(), getReduction());
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> n = groupSizeOrError(*this, getGroupAttr(), symbolTable);
  if (failed(n))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (getByShare())
    return verifyShareBlock(*this, getGroupAttr(), getAxis(), in, out, symbolTable);
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t a = in.getDimSize(d), b = out.getDimSize(d);
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
      continue;
    if (d == getAxis()) {
      if (a % *n != 0)
        return emitOpError("scatters dimension ")
               << d << " of size " << a << ", which does not divide by the "
               << *n << " members of " << getGroupAttr();
      if (b != a / *n)
        return emitOpError("result dimension ")
               << d << " must be " << a << " / " << *n << " = " << a / *n
               << ", got " << b;
    } else if (a != b) {
      return emitOpError("result dimension ") << d << " must equal the input's ("
                                              << a << "), got " << b;
    }
  }
  return success();
}

void ReduceScatterOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                  MLIRContext *context) {
  results.add<DropSingleMemberCollective<ReduceScatterOp>>(context);
}

//===----------------------------------------------------------------------===//
// all_gather
//===----------------------------------------------------------------------===//

LogicalResult AllGatherOp::verify() {
  if (failed(checkRankAndAxes(*this, getInput(), getResult(),
                              {{"axis", getAxis()}})))
    return failure();
  return verifyCollectiveCommon(*this, getInput(), getResult(), getCompression(),
                                getTopkRatio(), std::nullopt);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> n = groupSizeOrError(*this, getGroupAttr(), symbolTable);
  if (failed(n))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (getByShare())
    return verifyShareBlock(*this, getGroupAttr(), getAxis(), out, in, symbolTable);
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t a = in.getDimSize(d), b = out.getDimSize(d);
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b))
      continue;
    int64_t expected = d == getAxis() ? a * *n : a;
    if (b != expected)
      return emitOpError("result dimension ")
             << d << " must be " << expected
             << (d == getAxis() ? " (input size times group size)" : "")
             << ", got " << b;
  }
  return success();
}

void AllGatherOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropSingleMemberCollective<AllGatherOp>>(context);
}

//===----------------------------------------------------------------------===//
// shard
//===----------------------------------------------------------------------===//

LogicalResult ShardOp::verify() {
  if (getInput().getType().getElementType() != getResult().getType().getElementType())
    return emitOpError("must keep the element type");
  return success();
}

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyShareBlock(*this, getGroupAttr(), getAxis(),
                          cast<RankedTensorType>(getInput().getType()),
                          cast<RankedTensorType>(getResult().getType()), symbolTable);
}

//===----------------------------------------------------------------------===//
// broadcast
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type ") << getResult().getType()
           << " must equal the input type " << getInput().getType();
  if (getRoot() < 0)
    return emitOpError("'root' must be >= 0, got ") << getRoot();
  return verifyCollectiveCommon(*this, getInput(), getResult(), getCompression(),
                                getTopkRatio(), std::nullopt);
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> n = groupSizeOrError(*this, getGroupAttr(), symbolTable);
  if (failed(n))
    return failure();
  if (getRoot() >= *n)
    return emitOpError("root ") << getRoot() << " is not a member of "
                                << getGroupAttr() << ", which has " << *n
                                << " members";
  return success();
}

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropSingleMemberCollective<BroadcastOp>>(context);
}

//===----------------------------------------------------------------------===//
// all_to_all
//===----------------------------------------------------------------------===//

LogicalResult AllToAllOp::verify() {
  if (failed(checkRankAndAxes(*this, getInput(), getResult(),
                              {{"split_axis", getSplitAxis()},
                               {"concat_axis", getConcatAxis()}})))
    return failure();
  return verifyCollectiveCommon(*this, getInput(), getResult(), getCompression(),
                                getTopkRatio(), std::nullopt);
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FailureOr<int64_t> n = groupSizeOrError(*this, getGroupAttr(), symbolTable);
  if (failed(n))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  SmallVector<int64_t> expected(in.getShape());
  int64_t split = getSplitAxis(), concat = getConcatAxis();
  if (!ShapedType::isDynamic(expected[split])) {
    if (expected[split] % *n != 0)
      return emitOpError("splits dimension ")
             << split << " of size " << expected[split]
             << ", which does not divide by the " << *n << " members of "
             << getGroupAttr();
    expected[split] /= *n;
  }
  if (!ShapedType::isDynamic(expected[concat]))
    expected[concat] *= *n;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t b = out.getDimSize(d);
    if (!ShapedType::isDynamic(b) && !ShapedType::isDynamic(expected[d]) &&
        b != expected[d])
      return emitOpError("result dimension ")
             << d << " must be " << expected[d] << ", got " << b;
  }
  return success();
}

void AllToAllOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                             MLIRContext *context) {
  results.add<DropSingleMemberCollective<AllToAllOp>>(context);
}

//===----------------------------------------------------------------------===//
// tensor_parallel_copy
//===----------------------------------------------------------------------===//

LogicalResult TensorParallelCopyOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!symbolTable.lookupNearestSymbolFrom<TensorParallelGroupOp>(*this, getGroupAttr()))
    return emitOpError("is over ") << getGroupAttr()
                                   << ", which is not a het.tensor_parallel_group";
  return success();
}
