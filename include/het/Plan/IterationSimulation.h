//===- IterationSimulation.h - one 1F1B iteration, event by event -*- C++ -*-===//
//
// The planner scores plans with a closed form; this replays one iteration
// pass by pass (each stage's warm-up forwards, one-forward-one-backward, the
// remaining backwards; a pass starts once the neighbour finished it and the
// send arrived), for the Gantt chart and for het-sim, which varies each
// pass's duration (noise, stragglers) and queues sends on their links.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_ITERATIONSIMULATION_H
#define HET_PLAN_ITERATIONSIMULATION_H

#include "het/Plan/CostModel.h"

#include <functional>
#include <vector>

namespace het::plan {

/// One bar of the chart: stage, interval in seconds, what runs.
struct Box {
  int stage;
  double start, end;
  const char *kind; // "F", "B" or "sync"
  int micro;
};

struct Timeline {
  std::vector<Box> boxes;
  double end = 0;           // the iteration's makespan
  std::vector<double> busy; // compute seconds per stage
};

/// What may differ from the cost model's figures in one simulated iteration.
struct IterationVariation {
  /// Factor on the duration of stage `stage`'s forward (backward false) or
  /// backward of micro-batch `micro`; empty: 1.
  std::function<double(int stage, bool backward, int micro)> passFactor;
  /// Factor per stage on its gradient sync and optimizer step; empty: 1.
  std::vector<double> syncFactor;
  /// Sends from one stage to its neighbour queue on their link, one after
  /// another in each direction; false: every send travels at once.
  bool linkQueues = false;
};

/// Event simulation of one 1F1B iteration of `plan` with the stage times of
/// `evaluation` (varied by `variation`); gradient sync and optimizer follow
/// each stage's last backward. When the evaluation simulated ranks sharing
/// a host's cores (Evaluation::sharedCoresTime), so does this, rank by rank.
Timeline simulateIteration(const CostModel &cost, const Plan &plan, const Evaluation &evaluation,
                           const IterationVariation &variation = {});

} // namespace het::plan

#endif
