//===- ShapeRules.h - helpers of the het ops' shape rules -------*- C++ -*-===//
//
// Shared by the files that hold shape rules (HetShapeInference.cpp for the
// compute ops, HetLayout.cpp for concatenation and slicing): comparison of
// possibly dynamic sizes, readable shapes in diagnostics, window sizes.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_DIALECT_HET_IR_SHAPERULES_H
#define HET_LIB_DIALECT_HET_IR_SHAPERULES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeRange.h"
#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <string>

namespace mlir::het::shapes {

using Shape = SmallVector<int64_t, 4>;
constexpr int64_t kDynamic = ShapedType::kDynamic;

inline bool compatible(int64_t a, int64_t b) { return a == b || a == kDynamic || b == kDynamic; }

inline bool compatible(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!compatible(x, y))
      return false;
  return true;
}

inline std::string shapeString(ArrayRef<int64_t> shape) {
  std::string result = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      result += ", ";
    result += shape[i] == kDynamic ? "?" : std::to_string(shape[i]);
  }
  return result + "]";
}

inline RankedTensorType ranked(Type type) { return cast<RankedTensorType>(type); }
inline ArrayRef<int64_t> shapeOf(Value value) { return ranked(value.getType()).getShape(); }
inline Type elementOf(Value value) { return ranked(value.getType()).getElementType(); }

/// All values have the element type of the first one.
inline LogicalResult sameElementType(std::optional<Location> loc, StringRef what,
                                     ValueRange values) {
  Type first = elementOf(values.front());
  for (Value value : values.drop_front())
    if (elementOf(value) != first)
      return emitOptionalError(loc, what, " must all have element type ", first, ", got ",
                               elementOf(value));
  return success();
}

/// Checks `value` is a vector of `size` elements (the per-channel shape).
inline LogicalResult expectVector(std::optional<Location> loc, StringRef name, Value value,
                                  int64_t size, StringRef sizeName) {
  ArrayRef<int64_t> shape = shapeOf(value);
  if (shape.size() != 1 || !compatible(shape[0], size))
    return emitOptionalError(loc, name, " must have shape [", sizeName, " = ",
                             size == kDynamic ? "?" : std::to_string(size), "], got ",
                             shapeString(shape));
  return success();
}

inline RankedTensorType withShape(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

inline int64_t floorDivide(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// Output size of a sliding window, or kDynamic for an unknown input.
inline int64_t windowOutput(int64_t input, int64_t kernel, int64_t stride, int64_t pad,
                            int64_t dilation) {
  if (input == kDynamic || kernel == kDynamic)
    return kDynamic;
  return floorDivide(input + 2 * pad - dilation * (kernel - 1) - 1, stride) + 1;
}

inline LogicalResult checkPair(std::optional<Location> loc, StringRef name,
                               ArrayRef<int64_t> values, int64_t minimum) {
  if (values.size() != 2)
    return emitOptionalError(loc, "'", name, "' must have 2 entries (height, width), got ",
                             values.size());
  for (int64_t v : values)
    if (v < minimum)
      return emitOptionalError(loc, "'", name, "' entries must be >= ", minimum, ", got ", v);
  return success();
}

} // namespace mlir::het::shapes

#endif
