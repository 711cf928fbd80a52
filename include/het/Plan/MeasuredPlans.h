//===- MeasuredPlans.h - plans that ran, by their measured time -*- C++ -*-===//
//
// The planner's prediction is a model; a plan that ran has a measured
// iteration time. het-run --tuning-db records each job's median iteration
// time under its plan's key (the model trained and the plan as written),
// and het-compile --plan auto --tuning-db ranks the candidate plans by it:
// a plan that ran by what it measured, one that did not by its prediction
// scaled by how far the measured plans' predictions were off (the median
// of their measured/predicted), so the planner's own bias does not favour
// the plans it has not tried (the optimizer's curse).
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_MEASUREDPLANS_H
#define HET_PLAN_MEASUREDPLANS_H

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace het::plan {

/// A hex digest of `text` (64-bit FNV-1a): stable across runs and hosts.
std::string digestText(const std::string &text);

/// What a plan trains, as the key's first part: het-compile's input file
/// bytes and the options that shape the training step.
std::string trainedModelKey(const std::string &inputBytes, const std::string &trainingOptions);

/// A plan's key: "<model key>-<digest of what decides the run: the plan
/// file's cluster, global batch, micro-batches, schedule and stages>",
/// printed by the executable ("plan key: ...") and recorded by het-run
/// --tuning-db as the workload "plan <key>".
std::string measuredPlanKey(const std::string &modelKey, const nlohmann::json &plan);
/// The tuning database workload of a plan key, and the prefix of every
/// plan workload of one trained model.
std::string measuredPlanWorkload(const std::string &planKey);
std::string measuredPlanPrefix(const std::string &modelKey);

/// One candidate: its prediction and, where it ran, its measured time.
struct RankedCandidate {
  double predictedSeconds = 0;
  std::optional<double> measuredSeconds;
  /// What ranks it: measured, else predicted x the measured plans' median
  /// measured/predicted (1 when none ran).
  double expectedSeconds = 0;
};

/// Fills each candidate's expectedSeconds and returns the median
/// measured/predicted of those that ran (1 when none did).
double rankByMeasurement(std::vector<RankedCandidate> &candidates);

} // namespace het::plan

#endif
