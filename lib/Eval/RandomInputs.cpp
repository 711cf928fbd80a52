//===- RandomInputs.cpp - deterministic values for a function's arguments --===//

#include "het/Eval/RandomInputs.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/IR/IntegerInputs.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::het;

namespace het::eval {

HostArray randomArgument(func::FuncOp function, unsigned index, uint64_t seed) {
  Value argument = function.getArgument(index);
  auto type = cast<RankedTensorType>(argument.getType());
  HostArray array;
  for (int64_t size : type.getShape())
    array.shape.push_back(ShapedType::isDynamic(size) ? 1 : size);
  int64_t count = array.numElements();
  // One stream per (seed, argument), so adding an argument leaves the
  // others' values unchanged.
  std::mt19937_64 generator(seed * 1000003u + index);
  bool isState = static_cast<bool>(function.getArgAttr(index, HetDialect::getStateAttrName()));

  if (isa<IntegerType>(type.getElementType())) {
    array.kind = ElementKind::I64;
    array.integers.assign(count, 0);
    if (!isState) {
      std::uniform_int_distribution<int64_t> pick(0, integerInput(argument).bound - 1);
      for (int64_t &value : array.integers)
        value = pick(generator);
    }
    return array;
  }
  array.kind = type.getElementType().isF64() ? ElementKind::F64 : ElementKind::F32;
  array.floats.assign(count, 0.0);
  // Values an f32 argument can hold exactly, so every precision sees the
  // same inputs.
  bool isF32 = array.kind == ElementKind::F32;
  auto representable = [isF32](double value) -> HostFloat {
    return isF32 ? static_cast<float>(value) : value;
  };
  if (isState) {
    if (startsAtOne(argument)) // a running variance
      array.floats.assign(count, 1.0);
    return array;
  }
  if (function.getArgAttr(index, HetDialect::getParamAttrName())) {
    if (type.getRank() >= 2) {
      int64_t fanIn = count / array.shape[0];
      double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
      std::uniform_real_distribution<double> pick(-bound, bound);
      for (HostFloat &value : array.floats)
        value = representable(pick(generator));
    } else {
      double center = startsAtOne(argument) ? 1.0 : 0.0;
      std::uniform_real_distribution<double> pick(center - 0.1, center + 0.1);
      for (HostFloat &value : array.floats)
        value = representable(pick(generator));
    }
    return array;
  }
  std::normal_distribution<double> pick(0.0, 1.0);
  for (HostFloat &value : array.floats)
    value = representable(pick(generator));
  return array;
}

} // namespace het::eval
