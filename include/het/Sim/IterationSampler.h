//===- IterationSampler.h - many iterations of a plan, as they vary -*- C++ -*-===//
//
// The cost model gives one iteration time; a real job's iterations vary:
// every pass runs a little faster or slower than its mean, now and then a
// device straggles, and sends queue on their links. This samples many
// iterations of a plan under those effects, each with its own seed, so any
// one of them can be replayed (and drawn).
//
//===----------------------------------------------------------------------===//
#ifndef HET_SIM_ITERATIONSAMPLER_H
#define HET_SIM_ITERATIONSAMPLER_H

#include "het/Plan/IterationSimulation.h"

#include <cstdint>
#include <vector>

namespace het::sim {

struct Variability {
  /// Standard deviation of the log of each pass's duration factor (mean 1):
  /// 0.02 is the run-to-run spread of a busy GPU kernel sequence.
  double noise = 0.02;
  /// Chance that a device straggles for a whole iteration (thermal
  /// throttling, a noisy neighbour, a slow host), and how much slower its
  /// stage then runs: a stage is as fast as its slowest device.
  double stragglerProbability = 1e-4;
  double stragglerSlowdown = 1.5;
  /// Sends between stages queue on their link (else all travel at once).
  bool linkQueues = true;
  uint64_t seed = 1;
};

struct IterationStats {
  std::vector<double> times; // seconds, in the order simulated
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  int straggled = 0;     // iterations in which some device straggled
  int medianIndex = 0;   // the iteration whose time is the median
};

/// Simulates `iterations` iterations of `plan` (evaluated as `evaluation`).
IterationStats sampleIterations(const het::plan::CostModel &cost, const het::plan::Plan &plan,
                                const het::plan::Evaluation &evaluation, int iterations,
                                const Variability &variability);

/// Replays iteration `index` of sampleIterations with the same settings.
het::plan::Timeline replayIteration(const het::plan::CostModel &cost, const het::plan::Plan &plan,
                                    const het::plan::Evaluation &evaluation, int index,
                                    const Variability &variability);

} // namespace het::sim

#endif
