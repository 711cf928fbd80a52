//===- ShapeRespecialization.h - recompute result types after new inputs -*- C++ -*-===//
//
// Transformations that change the shape of some values (a new batch size,
// matrices split over tensor-parallel devices) set the new types at the
// source and let this recompute every result type downstream, in program
// order: from each op's shape rule (InferTypeOpInterface) where it has one,
// and for the ops whose result shape is an attribute of their type
// (reshape, broadcast_to, sum_to_shape, element-wise bodies) by carrying
// the change over:
//
//  * reshape: the input and output dimensions form groups of equal product
//    (`[4, 16, 32] -> [4, 16, 2, 16]` has groups {4}, {16}, {32 -> 2 x 16});
//    a group whose input changed scales the output group's outermost
//    dimension (a batch split, or heads split over devices);
//  * broadcast_to and sum_to_shape: dimensions that came from the input
//    follow it, stretched or summed ones keep their size;
//  * ops whose result has an operand's type (same-type traits): that type.
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_SHAPERESPECIALIZATION_H
#define HET_DIALECT_HET_TRANSFORMS_SHAPERESPECIALIZATION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

#include <functional>
#include <optional>

namespace mlir::het {

struct RespecializeOptions {
  /// A new batch size (old, new): a broadcast_to that adds a leading
  /// dimension of the old batch size gets the new one.
  std::optional<std::pair<int64_t, int64_t>> batch;
  /// Called on each op (the terminator too) before its result types are
  /// recomputed, when its operands have their new types: it may insert ops
  /// before it and replace its operands (tensor parallelism gathers split
  /// values there).
  std::function<void(Operation *)> beforeOp;
};

/// Recomputes the result types of every op in `function`, whose argument
/// types were just changed from `oldArgumentTypes`, and the function's
/// type. Fails with a diagnostic on the first op whose new shapes do not
/// work out (its operands no longer fit together, or a reshape cannot carry
/// the change).
LogicalResult respecializeShapes(func::FuncOp function, const RespecializeOptions &options,
                                 ArrayRef<Type> oldArgumentTypes);

/// A reshape's dimensions in groups of equal product: input dimensions
/// [inBegin, inEnd) become output dimensions [outBegin, outEnd)
/// (`[4, 16, 32] -> [4, 16, 2, 16]`: {4}, {16}, {32 -> 2 x 16}); size-1
/// dimensions join the group they follow. Failure when the products never
/// meet (not a reshape of static shapes).
struct ReshapeGroup {
  size_t inBegin, inEnd, outBegin, outEnd;
};
FailureOr<SmallVector<ReshapeGroup>> reshapeGroups(ArrayRef<int64_t> in, ArrayRef<int64_t> out);

/// The new type of a reshape whose input changed from `oldInput` to
/// `newInput`; failure when the change does not map onto output groups.
FailureOr<RankedTensorType> respecializeReshape(RankedTensorType oldInput,
                                                RankedTensorType oldOutput,
                                                RankedTensorType newInput);

} // namespace mlir::het

#endif
