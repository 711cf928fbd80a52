//===- GradientCheck.h - het-eval --check-gradients ----------------*- C++ -*-===//

#ifndef HET_TOOLS_HET_EVAL_GRADIENTCHECK_H
#define HET_TOOLS_HET_EVAL_GRADIENTCHECK_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>

namespace het::tools {

/// Checks het-autodiff's gradients of `functionName` (or of every function
/// with het.param arguments) against central finite differences, all in
/// f64. Prints one line per function; returns the process exit code (1 when
/// an error exceeds `tolerance` or something fails).
int runGradientChecks(mlir::ModuleOp module, const std::string &functionName,
                      unsigned samplesPerParam, double tolerance, uint64_t seed,
                      const std::string &inputsNpz, double step);

} // namespace het::tools

#endif // HET_TOOLS_HET_EVAL_GRADIENTCHECK_H
