//===- TensorParallel.h - Megatron-style splitting of a model -----*- C++ -*-===//
//
// het-tensor-parallel splits the matrices of a forward model over the T
// devices of a replica, layer by layer (each layer with its stage's degree).
// Sharding propagates forward through the ops of one segment of layers (a
// pipeline stage: split values never cross stages):
//
//  * a `het.linear` whose input is replicated and whose weight is a
//    parameter is column-parallel: each device holds rows [t*O/T, (t+1)*O/T)
//    of the weight (and bias) and computes that slice of the output
//    features; its input first passes a `het.tensor_parallel_copy` (whose
//    gradient all-reduces the partial input gradients);
//  * element-wise ops, transposes, softmax over another axis, batched
//    matmuls over the split dimension and reshapes that split or merge it as
//    the outermost dimension (features into heads, heads back into
//    features) keep the split, so attention is split by heads;
//  * a `het.linear` whose input is split along the features it contracts is
//    row-parallel: its weight's columns are split, its partial results are
//    joined by `het.all_reduce ... sum` (gradient: the identity) and its
//    bias is added after;
//  * a `het.embedding` of a parameter table is split by vocabulary
//    (`vocab_shard`), its lookups joined by an all-reduce;
//  * anything else that meets a split value (the loss, a norm over the
//    split axis, a value leaving its stage) gets it gathered first
//    (`het.all_gather`, gradient: each device's slice), so the language-model
//    head is column-parallel with gathered logits.
//
// A parameter is split only when all its uses agree on how (tied weights
// split by vocabulary for both the lookup and the head).
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_TENSORPARALLEL_H
#define HET_DIALECT_HET_TRANSFORMS_TENSORPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mlir::het {

/// What splitting `function` would do, layer by layer: which layers have
/// split parameters, and why a layer cannot take its degree.
struct TensorParallelReport {
  std::map<int64_t, int64_t> splitParameters; // layer -> parameters split
  std::map<int64_t, std::string> problems;    // layer -> why the degree does not fit
};

/// The degree of each layer (1: not split) and its segment: split values
/// flow between the layers of one segment (a pipeline stage) and are
/// gathered before they leave it.
struct TensorParallelLayout {
  std::function<int64_t(int64_t layer)> degree;
  std::function<int64_t(int64_t layer)> segment;
};

/// Analyses without changing anything.
TensorParallelReport analyzeTensorParallel(func::FuncOp function,
                                           const TensorParallelLayout &layout);

/// Splits `function` in place; its parameter arguments take their shard's
/// shape. Fails (with a diagnostic naming the op and the layer) where a
/// layer's degree does not divide what it must split (attention heads).
LogicalResult splitTensorParallel(func::FuncOp function, const TensorParallelLayout &layout);

} // namespace mlir::het

#endif
