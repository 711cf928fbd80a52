//===- Autodiff.h - building a training step from a forward function -*- C++ -*-===//
//
// The machinery behind `het-autodiff`, callable directly (het-eval's gradient
// check uses it without a pass manager).
//
//===----------------------------------------------------------------------===//

#ifndef HET_DIALECT_HET_TRANSFORMS_AUTODIFF_H
#define HET_DIALECT_HET_TRANSFORMS_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::het {

enum class OptimizerKind { None, SGD, Adam };

struct TrainingStepOptions {
  OptimizerKind optimizer = OptimizerKind::SGD;
  double learningRate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  double weightDecay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  bool decoupled = false;
  /// Dynamic loss scaling (fp16), as torch.amp.GradScaler: the backward
  /// starts from the scale instead of 1, the parameters' gradients are
  /// divided by it, a step whose gradients overflowed changes nothing, and
  /// the scale is updated (state `amp.scale_ratio`, `amp.growth_tracker`).
  bool lossScaling = false;
  double initScale = 65536.0, growthFactor = 2.0, backoffFactor = 0.5;
  int64_t growthInterval = 2000;
  /// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_)
  /// before the updates; 0: none.
  double clipGradNorm = 0.0;
};

/// Suffix of the generated function's name.
inline constexpr const char *kTrainStepSuffix = "_train_step";

/// Adds `@<name>_train_step` after `forward` in its module (see the pass
/// description in Passes.td for its signature). Emits a diagnostic and fails
/// when `forward` is not a single-block function returning one 0-d float
/// loss, has no parameters, or an op on a gradient path has no rule.
FailureOr<func::FuncOp> buildTrainingStep(func::FuncOp forward,
                                          const TrainingStepOptions &options);

} // namespace mlir::het

#endif // HET_DIALECT_HET_TRANSFORMS_AUTODIFF_H
