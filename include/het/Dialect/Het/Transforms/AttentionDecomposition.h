//===- AttentionDecomposition.h - het.attention as matmul, softmax, matmul -*- C++ -*-===//
//
// For code generators without an attention kernel (generated kernels,
// library=mlir and reference, and GPU builds): het.attention and
// het.attention_grad written as the het ops they fused, which every code
// generator has.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_ATTENTIONDECOMPOSITION_H
#define HET_DIALECT_HET_TRANSFORMS_ATTENTIONDECOMPOSITION_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir::het {

/// Replaces every het.attention in `root` by
///   scores = matmul(q, k^T), p = softmax(scores){scale, causal}, matmul(p, v)
/// and every het.attention_grad by the three ops' gradients. A gradient
/// whose forward op is in `root` too (same query, key, value and output)
/// reads that op's probabilities, as the unfused step did; otherwise (the
/// forward in another function, a layer outlined apart from its backward)
/// it computes them again. New ops inherit the discardable attributes
/// (het.layer, het.backward).
LogicalResult decomposeAttentionOver(Operation *root);

} // namespace mlir::het

#endif
