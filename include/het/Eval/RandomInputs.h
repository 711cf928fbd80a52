//===- RandomInputs.h - deterministic values for a function's arguments -*- C++ -*-===//
//
// What a user would otherwise have to write by hand to try a model: data,
// labels in range, and parameters initialized the way PyTorch's layers do.
// Used by het-eval (--random-inputs) and gradient checks.
//
//===----------------------------------------------------------------------===//

#ifndef HET_EVAL_RANDOMINPUTS_H
#define HET_EVAL_RANDOMINPUTS_H

#include "het/Eval/HostArray.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace het::eval {

/// A value for argument `index` of `function`, the same for the same seed:
/// - optimizer state (`het.state`): zeros;
/// - integer tensors: uniform in [0, bound), where the bound is the class
///   count of a het.cross_entropy or the row count of a het.embedding that
///   uses the argument (2 when neither does);
/// - parameters (`het.param`) of rank >= 2: uniform(+-1/sqrt(fan_in)) as
///   PyTorch's Linear/Conv2d; rank <= 1: 1 +- 0.1 when it is the scale of a
///   normalization, else +-0.1;
/// - other float data: standard normal.
HostArray randomArgument(mlir::func::FuncOp function, unsigned index, uint64_t seed);

} // namespace het::eval

#endif // HET_EVAL_RANDOMINPUTS_H
