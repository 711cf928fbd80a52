//===- FrequencyScaling.h - slow the stages that can wait -------*- C++ -*-===//
//
// Perseus and EnvPipe observe that in a pipeline only the slowest stage
// sets the pace: the others finish early and wait. Lowering their clocks
// stretches their compute into that slack at lower power. This chooses a
// clock per stage (greedy: the lowering that saves the most energy per
// second it adds, until no lowering saves energy within the slowdown
// allowed) under the cost model's 1F1B closed form, and reports the energy
// per iteration before and after.
//
// Model, stated so it can be checked: a stage's forward and backward
// compute scales as 1/clock (compute-bound, so the slowdown is an upper
// bound); sends, gradient sync and the optimizer step do not; a device
// draws idle power all iteration and, while it computes, its busy power at
// that clock, TDP x the kind's frequency-power curve (catalog
// `frequency_power`; where none is published, kDefaultPowerCurve).
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_FREQUENCYSCALING_H
#define HET_PLAN_FREQUENCYSCALING_H

#include "het/Plan/CostModel.h"

#include <string>
#include <utility>
#include <vector>

namespace het::plan {

/// Relative busy power over relative clock for kinds with no published
/// curve: dynamic power ~ f V^2 with voltage tracking the clock above a
/// floor (the shape of the A100/V100 DVFS measurements the catalog cites),
/// as (clock, power / TDP) points.
extern const std::vector<std::pair<double, double>> kDefaultPowerCurve;

/// Busy power of one device of `spec` at relative clock `clock`, in watts
/// (never below its idle power).
double busyWattsAt(const DeviceSpec &spec, double clock);

struct FrequencyScalingOptions {
  double maxSlowdown = 0.01; // iteration time may grow by at most this
  double step = 0.05;        // clock levels 1, 1 - step, ...
  double minClock = 0.5;     // lowest clock considered
};

struct FrequencyScaling {
  std::vector<double> clocks; // per stage, 1 = full clock
  double timeBefore = 0, timeAfter = 0;     // closed form, seconds
  double energyBefore = 0, energyAfter = 0; // joules per iteration
  /// Kinds in the plan whose curve is kDefaultPowerCurve.
  std::vector<std::string> assumedCurves;
  /// Kinds in the plan with no TDP in the catalog: left out of the energy
  /// figures (and never slowed, which could only cost time).
  std::vector<std::string> unpowered;
  double slowdown() const { return timeBefore > 0 ? timeAfter / timeBefore - 1 : 0; }
  double saved() const { return energyBefore > 0 ? 1 - energyAfter / energyBefore : 0; }
};

/// Chooses stage clocks for `plan` (evaluated as `evaluation`).
FrequencyScaling scaleStageFrequencies(const CostModel &cost, const Plan &plan,
                                       const Evaluation &evaluation,
                                       const FrequencyScalingOptions &options = {});

} // namespace het::plan

#endif
