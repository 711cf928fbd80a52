//===- SharedHostSchedule.h - a pipeline whose ranks share a host's cores -*- C++ -*-===//
//
// When a plan puts more ranks on one host than it has cores (the local
// two-kind cluster: four ranks on two cores), the closed form of the 1F1B
// pipeline (sum of stage times plus (m-1) times the slowest) assumes every
// rank computes on a core of its own, and a bound of all the work over the
// cores ignores the schedule's dependencies. This simulates the schedule:
// each rank runs its stage's 1F1B order; a forward waits for the previous
// stage's forward of the micro-batch (all its replicas) and the message
// across the boundary, a backward for the next stage's backward; the
// ranks that are computing at any moment share the cores equally
// (processor sharing, as the kernel's scheduler does over its slices).
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_SHAREDHOSTSCHEDULE_H
#define HET_PLAN_SHAREDHOSTSCHEDULE_H

#include <vector>

namespace het::plan {

struct SharedHostStage {
  /// Per rank of the stage: seconds of one micro-batch's forward and
  /// backward on a core of its own.
  std::vector<double> fwd, bwd;
  /// Seconds for a message across the boundary to the next stage (either
  /// direction); unused for the last stage.
  double messageToNext = 0;
};

/// Seconds from the step's start until every rank has run its forwards
/// and backwards of `microBatches` micro-batches under 1F1B on `cores`.
double simulateSharedHost(const std::vector<SharedHostStage> &stages, int microBatches,
                          int cores);

} // namespace het::plan

#endif
