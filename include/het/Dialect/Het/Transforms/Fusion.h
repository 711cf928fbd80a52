//===- Fusion.h - the rewrite patterns of het-fuse ------------------*- C++ -*-===//
//
// One populate function per fusion, so the pass (and any other pipeline)
// can choose which to apply. Every pattern checks legality itself: it fires
// only when no other op reads a value the fusion removes.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_FUSION_H
#define HET_DIALECT_HET_TRANSFORMS_FUSION_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::het {

/// batch_norm + relu -> batch_norm_relu, and in training steps
/// relu_grad + batch_norm_grad -> batch_norm_relu_grad.
void populateBatchNormReluFusionPatterns(RewritePatternSet &patterns);
/// matmul{transpose_rhs} + bias add -> linear; linear + relu/gelu -> linear
/// with activation.
void populateLinearActivationFusionPatterns(RewritePatternSet &patterns);
/// Chains of element-wise ops -> het.elementwise.
void populateElementwiseFusionPatterns(RewritePatternSet &patterns);
/// conv2d + batch_norm_inference -> conv2d with rescaled filter and bias.
void populateConvBatchNormFoldingPatterns(RewritePatternSet &patterns);

} // namespace mlir::het

#endif // HET_DIALECT_HET_TRANSFORMS_FUSION_H
