//===- SyncBatchNorm.h - batch statistics over a stage's replicas -*- C++ -*-===//
//
// Replicas of a stage each hold a share of the micro-batch, but batch
// normalization must use the statistics of the whole micro-batch (as
// PyTorch's SyncBatchNorm does), so that a plan never changes the result
// beyond summation order.
//
//===----------------------------------------------------------------------===//
#ifndef HET_LIB_PARTITION_SYNCBATCHNORM_H
#define HET_LIB_PARTITION_SYNCBATCHNORM_H

#include "het/Dialect/Het/IR/HetOps.h"

namespace het::partition {

/// Rewrites every batch_norm(_relu) of `stage` and its gradient into
/// per-channel sums, `het.all_reduce ... sum` of them over the stage's
/// replicas, and element-wise normalization, for statistics over
/// `microBatchSamples` samples per micro-batch. The gradients of scale and
/// bias stay each replica's own part (the update's all-reduce adds them).
mlir::LogicalResult synchronizeBatchNorm(mlir::het::StageOp stage, int64_t microBatchSamples);

} // namespace het::partition

#endif
