//===- BatchNormDecomposition.h - batch norm as sums and element-wise ops -*- C++ -*-===//
//
// Batch normalization (and BN+ReLU) and their gradients written as het ops
// every code generator has: per-channel reduce_sum, reshape and
// het.elementwise. Two users: SyncBatchNorm (lib/Partition), whose partial
// sums are all-reduced over a stage's replicas, and the generated kernels
// (library=mlir, GPU builds), which have no batch-norm kernel.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_BATCHNORMDECOMPOSITION_H
#define HET_DIALECT_HET_TRANSFORMS_BATCHNORMDECOMPOSITION_H

#include "mlir/IR/Builders.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::het {

/// Turns per-channel sums over this rank's samples into sums over every
/// sample the statistics cover: the identity when one rank holds the whole
/// batch, an all-reduce over a stage's replicas for SyncBatchNorm.
using CombinePartialSums = llvm::function_ref<Value(OpBuilder &, Location, Value)>;

/// batch_norm, batch_norm_relu, batch_norm_grad, batch_norm_relu_grad and
/// batch_norm_inference (one element-wise op; nothing to combine).
bool isDecomposableBatchNorm(Operation *op);

/// Replaces `op` (isDecomposableBatchNorm) by sums, `combine`d, and
/// element-wise normalization over `samples` samples (each the spatial size
/// of the input), two passes for the variance. The new ops inherit `op`'s
/// discardable attributes (het.layer, het.backward). A
/// het.batch_norm_running_stats of the forward gets `samples` when it
/// differs from the op's own batch. Forward, for x [b, C, ...]:
///   mean    = combine(sum(x)) / n
///   inv_std = rsqrt(combine(sum((x - mean)^2)) / n + eps)
///   y       = (x - mean) * inv_std * gamma + beta          (relu: max(y, 0))
/// Backward, xhat = (x - mean) * inv_std, dy masked by y > 0 for relu:
///   dbeta = sum(dy), dgamma = sum(dy * xhat)                (this rank's)
///   dx    = gamma * inv_std * (dy - combine(dbeta) / n - xhat * combine(dgamma) / n)
LogicalResult decomposeBatchNorm(Operation *op, double samples, CombinePartialSums combine);

/// decomposeBatchNorm of every such op in `root`, over each op's own batch
/// (no combining): what generated-kernel builds run.
LogicalResult decomposeBatchNormOver(Operation *root);

} // namespace mlir::het

#endif
