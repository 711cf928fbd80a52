//===- AutoPlan.h - --plan auto: calibrate local device kinds, then plan -*- C++ -*-===//
//
// Catalog figures mean little for CPUs, and the two local CPU kinds
// (cpu.onednn, cpu.mlir) differ by their code, not their silicon. So before
// planning, each local kind's speed is measured on the model itself: the
// step compiled for that kind's kernels runs a few steps on one thread, and
// its achieved FLOP/s replaces the catalog's figure. The planner then
// searches its whole space with those speeds (stages and their replica
// counts, mixed-kind stages with shares by speed, tensor parallelism), and
// the runtime runs whatever it picks.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TOOLS_HET_COMPILE_AUTOPLAN_H
#define HET_TOOLS_HET_COMPILE_AUTOPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace het::compile {

/// One device kind's step time: measured now (`source` empty) or taken from
/// the tuning database (`source` says which file and when it was measured).
struct StepTime {
  double seconds = 0;
  std::string source;
};

struct AutoPlanRequest {
  std::string clusterFile;
  int microBatches = 0;  // 0: the planner chooses
  long globalBatch = 0;  // 0: the model's batch x micro-batches x the smallest group
  /// Where the chosen plan is written (het-plan's JSON format), and the
  /// calibrated device kinds (het-plan --devices).
  std::string planOut, devicesOut;
  /// Seconds one step of the whole model takes on one rank with `library`'s
  /// kernels ("dnnl", "mlir", "reference"), one thread, the model's batch.
  std::function<llvm::Expected<StepTime>(const std::string &library)> measureStep;
  /// The tuning database (--tuning-db; empty: none): a kind with stage
  /// profiles there (het-tune stages) is priced by them and not
  /// calibrated, and measured messages price communication in the node.
  std::string tuningDb;
  /// The number format the step is compiled in (fp32, bf16, fp16;
  /// --precision, tf32 as fp32): the calibrated speeds are its, and every
  /// kind of the cluster must have it (a kind that lacks it is an error
  /// naming the group and kind). Empty: layers of several formats
  /// (--layer-precisions); the plan then states none.
  std::string format = "fp32";
  /// What is trained (het/Plan/MeasuredPlans.h; empty: unknown): with a
  /// tuning database, candidate plans that ran before (het-run
  /// --tuning-db) are ranked by their measured iteration time.
  std::string modelKey;
};

struct AutoPlanResult {
  double predictedSeconds = 0; // the plan's iteration time, per the cost model
  std::string report;          // what was measured and chosen, for the user
};

/// Plans `step` (a training step with het.layer ops) for the cluster and
/// writes the plan to request.planOut.
llvm::Expected<AutoPlanResult> planForCluster(mlir::ModuleOp module, mlir::func::FuncOp step,
                                              const AutoPlanRequest &request);

/// The key (het/Plan/MeasuredPlans.h) of the plan in `planFile` for the
/// model `modelKey`; empty when the file cannot be read.
std::string measuredPlanKeyOfFile(const std::string &modelKey, const std::string &planFile);

/// The iteration time the planner predicts for the plan in `planFile` on
/// `clusterFile`, with the measurements of `tuningDb` (stage profiles,
/// messages); 0 when the database holds none for this model and host.
/// `report` says what was used.
llvm::Expected<double> predictPlanFile(mlir::ModuleOp module, mlir::func::FuncOp step,
                                       const std::string &clusterFile,
                                       const std::string &planFile, const std::string &tuningDb,
                                       std::string &report);

} // namespace het::compile

#endif
