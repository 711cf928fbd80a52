//===- GradientCheck.cpp - het-eval --check-gradients ----------------------===//
//
// For each parameter element e checked, the five-point central difference
//   fd = (8 (L(p + h e) - L(p - h e)) - (L(p + 2h e) - L(p - 2h e))) / 12h
// with h = 1e-6 by default (truncation error O(h^4)) against the gradient from the
// het-autodiff training step (optimizer=none), both evaluated in 80-bit
// extended precision, so the rounding error of the differences (~1e-19 L / h)
// stays far below the checked figure. The error is |ad - fd| / max(|ad|, |fd|, 1e-3 * G), where G is the
// largest gradient element of the function: relative, except that elements
// a thousand times below the function's gradient scale are judged against
// that scale (finite differences cannot resolve them better).
//
// ReLU and max pooling make the loss piecewise smooth. Where a kink lies
// within +-2h the stencil is meaningless; such an element is detected by the
// three-point estimates at h and 2h disagreeing, reported and skipped.
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/Transforms/Autodiff.h"
#include "het/Eval/Evaluator.h"
#include "het/Eval/Npy.h"
#include "het/Eval/RandomInputs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using ::het::eval::HostArray;

namespace het::tools {

namespace {


struct Worst {
  double error = 0;
  std::string where;
};

LogicalResult checkOne(func::FuncOp forward, unsigned samplesPerParam, uint64_t seed,
                       const ::het::eval::NamedArrays &given, double tolerance,
                       double kStep) {
  mlir::het::TrainingStepOptions options;
  options.optimizer = mlir::het::OptimizerKind::None;
  auto step = mlir::het::buildTrainingStep(forward, options);
  if (failed(step))
    return failure();

  std::vector<HostArray> arguments;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    std::string key = mlir::het::argumentName(forward, i);
    auto it = llvm::find_if(given, [&](const auto &entry) { return entry.first == key; });
    arguments.push_back(it != given.end() ? it->second
                                          : ::het::eval::randomArgument(forward, i, seed));
  }
  auto gradients = ::het::eval::evaluate(*step, arguments, ::het::eval::Precision::Extended);
  if (failed(gradients))
    return failure();
  auto lossAt = [&](const std::vector<HostArray> &args) -> FailureOr<long double> {
    auto out = ::het::eval::evaluate(forward, args, ::het::eval::Precision::Extended);
    if (failed(out))
      return failure();
    return (*out)[0].floats[0];
  };

  // Results: the loss, one gradient per parameter, then any state the
  // forward model updates (not gradients).
  size_t params = 0;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    params += static_cast<bool>(forward.getArgAttr(i, mlir::het::HetDialect::getParamAttrName()));
  double scale = 0; // the function's gradient scale G
  for (size_t r = 1; r < 1 + params && r < gradients->size(); ++r)
    for (long double g : (*gradients)[r].floats)
      scale = std::max(scale, static_cast<double>(std::fabs(g)));

  Worst worst;
  int64_t checked = 0, skipped = 0;
  unsigned resultIndex = 1; // results: loss, then one gradient per parameter
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (!forward.getArgAttr(i, mlir::het::HetDialect::getParamAttrName()))
      continue;
    const HostArray &gradient = (*gradients)[resultIndex++];
    int64_t count = arguments[i].numElements();
    int64_t stride = std::max<int64_t>(1, count / std::max(1u, samplesPerParam));
    for (int64_t e = (seed * 7919) % stride; e < count; e += stride) {
      std::vector<HostArray> shifted = arguments;
      long double original = arguments[i].floats[e];
      long double at[4]; // L(p - 2h), L(p - h), L(p + h), L(p + 2h)
      const double offsets[4] = {-2 * kStep, -kStep, kStep, 2 * kStep};
      for (int k = 0; k < 4; ++k) {
        shifted[i].floats[e] = original + offsets[k];
        auto loss = lossAt(shifted);
        if (failed(loss))
          return failure();
        at[k] = *loss;
      }
      double near = static_cast<double>((at[2] - at[1]) / (2 * kStep));
      double far = static_cast<double>((at[3] - at[0]) / (4 * kStep));
      double numeric = static_cast<double>((8 * (at[2] - at[1]) - (at[3] - at[0])) / (12 * kStep));
      double floor = std::max(1e-3 * scale, 1e-300);
      if (std::fabs(near - far) > 1e-3 * std::max({std::fabs(near), std::fabs(far), floor})) {
        ++skipped; // a kink within +-2h
        continue;
      }
      double analytic = static_cast<double>(gradient.floats[e]);
      double denominator = std::max({std::fabs(analytic), std::fabs(numeric), floor});
      double error = std::fabs(analytic - numeric) / denominator;
      ++checked;
      if (error >= worst.error) {
        worst.error = error;
        worst.where = mlir::het::argumentName(forward, i) + "[" + std::to_string(e) +
                      "]: autodiff " + llvm::formatv("{0:e6}", analytic).str() +
                      ", finite difference " + llvm::formatv("{0:e6}", numeric).str();
      }
    }
  }
  (*step).erase();
  // Nearly all elements must be checkable, or the check says little.
  bool pass = worst.error <= tolerance && checked > 0 && skipped * 10 <= checked;
  llvm::outs() << "gradcheck @" << forward.getSymName() << ": " << checked
               << " elements (" << skipped << " skipped at kinks), max relative error "
               << llvm::format("%.3e", worst.error) << " (" << worst.where << ") "
               << (pass ? "PASS" : "FAIL") << "\n";
  return success(pass);
}

} // namespace

int runGradientChecks(ModuleOp module, const std::string &functionName,
                      unsigned samplesPerParam, double tolerance, uint64_t seed,
                      const std::string &inputsNpz, double step) {
  ::het::eval::NamedArrays given;
  if (!inputsNpz.empty()) {
    auto arrays = ::het::eval::readNpz(inputsNpz);
    if (!arrays) {
      llvm::errs() << "het-eval: " << llvm::toString(arrays.takeError()) << "\n";
      return 1;
    }
    given = std::move(*arrays);
  }
  SmallVector<func::FuncOp> targets;
  for (auto function : module.getOps<func::FuncOp>()) {
    bool hasParam = false;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      hasParam |= static_cast<bool>(function.getArgAttr(i, mlir::het::HetDialect::getParamAttrName()));
    if ((functionName.empty() && hasParam && !function.getSymName().ends_with("_train_step")) ||
        function.getSymName() == functionName)
      targets.push_back(function);
  }
  if (targets.empty()) {
    llvm::errs() << "het-eval: no function "
                 << (functionName.empty() ? "with het.param arguments"
                                          : "@" + functionName)
                 << " to check\n";
    return 1;
  }
  bool allPass = true;
  for (func::FuncOp function : targets)
    allPass &= succeeded(checkOne(function, samplesPerParam, seed, given, tolerance, step));
  return allPass ? 0 : 1;
}

} // namespace het::tools
