//===- SyncBatchNorm.cpp - batch statistics over a stage's replicas --------===//
//
// The batch-norm decomposition (BatchNormDecomposition.h) with its partial
// sums all-reduced over the stage's replicas: mean, variance and the
// gradients' per-channel sums are those of the whole micro-batch, as
// PyTorch's SyncBatchNorm computes them; the gradients of scale and bias
// stay each replica's own part (the update's all-reduce adds them).
//
//===----------------------------------------------------------------------===//

#include "SyncBatchNorm.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/Transforms/BatchNormDecomposition.h"

using namespace mlir;
using namespace mlir::het;

namespace het::partition {

LogicalResult synchronizeBatchNorm(StageOp stage, int64_t microBatchSamples) {
  SmallVector<Operation *> ops;
  stage.getBodyBlock().walk([&](Operation *op) {
    // Inference with running statistics has no batch statistics to share.
    if (isDecomposableBatchNorm(op) && !isa<BatchNormInferenceOp>(op))
      ops.push_back(op);
  });
  auto overReplicas = [&](OpBuilder &b, Location loc, Value partial) -> Value {
    return b.create<AllReduceOp>(loc, partial.getType(), partial,
                                 SymbolRefAttr::get(stage.getSymNameAttr()), ReductionKind::Sum,
                                 CollectiveAlgorithm::Ring, CompressionKind::None, FloatAttr());
  };
  for (Operation *op : ops)
    if (failed(decomposeBatchNorm(op, double(microBatchSamples), overReplicas)))
      return failure();
  return success();
}

} // namespace het::partition
