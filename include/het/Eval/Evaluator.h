//===- Evaluator.h - the reference evaluator of het functions ------*- C++ -*-===//
//
// Executes a func.func of het ops on host arrays with plain loops, in f32 or
// f64. It is the golden reference for autodiff, fusion and every code
// generator, not a fast path. Every het compute op, the fused element-wise
// op, and the arith ops training steps use on tensors are supported; anything
// else is an error on that op naming it.
//
//===----------------------------------------------------------------------===//

#ifndef HET_EVAL_EVALUATOR_H
#define HET_EVAL_EVALUATOR_H

#include "het/Eval/HostArray.h"
#include "het/Eval/RandomContext.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace het::eval {

/// Working precision of every float computation. Declared element types
/// only decide the file dtype of results: F64 runs an f32 program in double.
/// Extended (x87 80-bit long double, 64-bit mantissa) is for finite-
/// difference gradient checks, whose rounding error it cuts 2000-fold.
enum class Precision { F32, F64, Extended };

/// Runs `function` on `arguments` (one per function argument, checked
/// against the argument types). On failure, diagnostics have been emitted on
/// the offending op or the function. Arguments and results are named by
/// mlir::het::argumentName / resultName (HetNames.h).
/// `random` gives het.dropout its counters (the step of a training loop).
mlir::FailureOr<std::vector<HostArray>>
evaluate(mlir::func::FuncOp function, const std::vector<HostArray> &arguments,
         Precision precision, const RandomContext &random = {});

} // namespace het::eval

#endif // HET_EVAL_EVALUATOR_H
