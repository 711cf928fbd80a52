//===- HetLayout.cpp - shape rules and folds of concat and slice ----------===//

#include "ShapeRules.h"

#include "het/Dialect/Het/IR/HetOps.h"

#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::het;
using namespace mlir::het::shapes;

namespace {

/// `axis` in [0, rank), or an error naming what it is the axis of.
FailureOr<int64_t> normalizedAxis(std::optional<Location> loc, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    (void)emitOptionalError(loc, "axis ", axis, " is out of range for rank ", rank);
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

/// Checks a slice's attribute lists and returns the normalized axes.
FailureOr<SmallVector<int64_t>> sliceAxes(std::optional<Location> loc, int64_t rank,
                                          ArrayRef<int64_t> axes, ArrayRef<ArrayRef<int64_t>> lists,
                                          ArrayRef<StringRef> names) {
  for (auto [list, name] : llvm::zip(lists, names))
    if (list.size() != axes.size()) {
      (void)emitOptionalError(loc, "'", name, "' must have one entry per axis (", axes.size(),
                              "), got ", list.size());
      return failure();
    }
  SmallVector<int64_t> normalized;
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = normalizedAxis(loc, axis, rank);
    if (failed(a))
      return failure();
    if (!seen.insert(*a).second) {
      (void)emitOptionalError(loc, "axis ", axis, " is named twice");
      return failure();
    }
    normalized.push_back(*a);
  }
  return normalized;
}

int64_t sliceLength(int64_t start, int64_t end, int64_t step) {
  return (end - start + step - 1) / step;
}

} // namespace

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  if (failed(sameElementType(loc, "inputs", inputs)))
    return failure();
  Shape shape(shapeOf(inputs.front()));
  FailureOr<int64_t> axis = normalizedAxis(loc, adaptor.getAxis(), shape.size());
  if (failed(axis))
    return failure();
  for (auto [index, input] : llvm::enumerate(inputs.drop_front())) {
    ArrayRef<int64_t> other = shapeOf(input);
    if (other.size() != shape.size())
      return emitOptionalError(loc, "input #", index + 1, " has rank ", other.size(),
                               ", input #0 has rank ", shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (int64_t(d) == *axis) {
        shape[d] = shape[d] == kDynamic || other[d] == kDynamic ? kDynamic : shape[d] + other[d];
        continue;
      }
      if (!compatible(shape[d], other[d]))
        return emitOptionalError(loc, "input #", index + 1, " has shape ", shapeString(other),
                                 ", which differs from ", shapeString(shapeOf(inputs.front())),
                                 " outside axis ", *axis);
    }
  }
  types.push_back(withShape(shape, elementOf(inputs.front())));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Shape shape(shapeOf(adaptor.getInput()));
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  FailureOr<SmallVector<int64_t>> axes = sliceAxes(
      loc, shape.size(), adaptor.getAxes(), {starts, ends, steps}, {"starts", "ends", "steps"});
  if (failed(axes))
    return failure();
  for (auto [i, axis] : llvm::enumerate(*axes)) {
    int64_t size = shape[axis];
    if (steps[i] < 1)
      return emitOptionalError(loc, "step ", steps[i], " along axis ", axis, " must be >= 1");
    if (starts[i] < 0 || starts[i] > ends[i] || (size != kDynamic && ends[i] > size))
      return emitOptionalError(loc, "range [", starts[i], ", ", ends[i], ") along axis ", axis,
                               " must satisfy 0 <= start <= end <= ",
                               size == kDynamic ? std::string("?") : std::to_string(size));
    shape[axis] = sliceLength(starts[i], ends[i], steps[i]);
  }
  types.push_back(withShape(shape, elementOf(adaptor.getInput())));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() != getType())
    return {};
  for (int64_t step : getSteps())
    if (step != 1)
      return {};
  return getInput(); // every axis whole
}

LogicalResult SliceGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  Shape shape(shapeOf(adaptor.getGradOutput()));
  ArrayRef<int64_t> starts = adaptor.getStarts(), steps = adaptor.getSteps(),
                    sizes = adaptor.getSizes();
  FailureOr<SmallVector<int64_t>> axes = sliceAxes(
      loc, shape.size(), adaptor.getAxes(), {starts, steps, sizes}, {"starts", "steps", "sizes"});
  if (failed(axes))
    return failure();
  for (auto [i, axis] : llvm::enumerate(*axes)) {
    int64_t taken = shape[axis];
    if (steps[i] < 1 || starts[i] < 0 ||
        (taken != kDynamic && taken > 0 && starts[i] + (taken - 1) * steps[i] >= sizes[i]))
      return emitOptionalError(loc, "a slice of ", taken, " elements from ", starts[i],
                               " in steps of ", steps[i], " does not fit in size ", sizes[i],
                               " along axis ", axis);
    shape[axis] = sizes[i];
  }
  types.push_back(withShape(shape, elementOf(adaptor.getGradOutput())));
  return success();
}
