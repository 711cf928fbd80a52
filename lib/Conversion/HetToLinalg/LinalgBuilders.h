//===- LinalgBuilders.h - building blocks of het's linalg lowering -*- C++ -*-===//
//
// The pieces every part of convert-het-to-linalg builds from (element-wise
// ops, the ops with reductions, the contractions of library=mlir, layout
// ops): linalg.generic over broadcast operands, reductions along axes,
// reshapes, filled tensors, the runtime's learning rate and label check.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_CONVERSION_HETTOLINALG_LINALGBUILDERS_H
#define HET_LIB_CONVERSION_HETTOLINALG_LINALGBUILDERS_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::het::lowering {

using BodyBuilder = function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// Maps an operand onto the iteration space of `resultType` as NumPy
/// broadcasting does: trailing dimensions align, size-1 dimensions repeat.
AffineMap broadcastMap(MLIRContext *context, RankedTensorType operand,
                       RankedTensorType resultType);

/// One linalg.generic over `resultTypes`' shape (all the same) reading the
/// broadcast `inputs`; `body` computes the results from one scalar each.
SmallVector<Value> buildElementwise(OpBuilder &b, Location loc, TypeRange resultTypes,
                                    ValueRange inputs, BodyBuilder body);

Value constantLike(OpBuilder &b, Location loc, Type type, double value);

/// Sums `input` into `resultType`: dimensions of the input that the result
/// lacks (leading) or holds with size 1 are reduced (sum_to_shape, and
/// reduce_sum with keep_dims); `dropped` instead names reduced dimensions
/// absent from the result (reduce_sum without keep_dims).
Value buildSum(OpBuilder &b, Location loc, Value input, RankedTensorType resultType,
               ArrayRef<int64_t> dropped);

/// buildSum's shape rules with another reduction: the result starts at
/// `initial` and `combine(accumulated, element)` folds each element in.
using ReductionCombiner = function_ref<Value(OpBuilder &, Location, Value, Value)>;
Value buildReduction(OpBuilder &b, Location loc, Value input, RankedTensorType resultType,
                     ArrayRef<int64_t> dropped, double initial, ReductionCombiner combine);

/// Reshape as collapse-to-1-D then expand: always valid for static shapes.
Value buildReshape(OpBuilder &b, Location loc, Value input, RankedTensorType resultType);

/// Reduces `inputs` (same shape) along `axis` with `combine(acc, args, ivs)`
/// starting from `init`; the result drops the axis.
Value buildAxisReduction(OpBuilder &b, Location loc, ValueRange inputs, int64_t axis,
                         double init,
                         function_ref<Value(OpBuilder &, Location, Value, ValueRange)> combine);

/// Maps a tensor reduced along `axis` back onto the full iteration space.
AffineMap droppedAxisMap(MLIRContext *context, int64_t rank, int64_t axis);

/// The iteration space of a layer norm (forward or backward): rows reduced
/// along the last axis, per-feature vectors broadcast along it.
struct LastAxisLayout {
  int64_t rank, axis, size;
  AffineMap full, row, channel;
  SmallVector<utils::IteratorType> reduce, parallel;
};

LastAxisLayout lastAxisLayout(OpBuilder &b, RankedTensorType type, Value scale);

/// A parallel linalg.generic over `resultType` reading full-shape `inputs`
/// and axis-reduced `reduced` tensors.
Value buildWithReduced(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
                       ValueRange reduced, int64_t axis,
                       function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// One linalg.generic with explicit maps and iterators; `body` gets the
/// input scalars then the output accumulators and returns the new outputs.
SmallVector<Value> buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                                ArrayRef<AffineMap> inputMaps, ValueRange inits,
                                ArrayRef<AffineMap> outputMaps,
                                ArrayRef<utils::IteratorType> iterators,
                                function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body);

/// A tensor of `shape` filled with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type element,
                   double value);

/// Labels outside [0, classes) would index out of bounds in the generated
/// gather: the runtime checks them first and stops with the reference's
/// message (hetrt_check_labels, include/het-c/hetrt.h).
void checkLabels(OpBuilder &b, Location loc, Operation *op, Value labels, int64_t classes);
/// The same for a table lookup's indices against its rows
/// (hetrt_check_indices).
void checkIndices(OpBuilder &b, Location loc, Operation *op, Value indices, int64_t rows);

/// The learning rate the executable runs with: `--lr` when given, else the
/// one compiled in. Asked once per update, so one binary serves any rate.
Value runtimeLearningRate(OpBuilder &b, Location loc, Operation *op, double compiled,
                          Type element);

/// relu(x) = x > 0 ? x : 0 (and its gradient masks by the same test), as
/// the reference kernels write them.
Value positive(OpBuilder &nb, Location l, Value x);

Value reluScalar(OpBuilder &nb, Location l, Value x);

/// gelu(x) = x/2 (1 + erf(x/sqrt 2)), or with `tanhForm` PyTorch's tanh
/// approximation; shared by het.gelu and the fused activation of the
/// generated linear layer (library=mlir).
Value geluScalar(OpBuilder &nb, Location l, Value x, bool tanhForm);

} // namespace mlir::het::lowering

#endif
