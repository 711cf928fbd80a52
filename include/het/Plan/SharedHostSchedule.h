//===- SharedHostSchedule.h - a pipeline whose ranks share a host's cores -*- C++ -*-===//
//
// When a plan puts more ranks on one host than it has cores (the local
// two-kind cluster: four ranks on two cores), the closed form of the 1F1B
// pipeline (sum of stage times plus (m-1) times the slowest) assumes every
// rank computes on a core of its own, and a bound of all the work over the
// cores ignores the schedule's dependencies. This simulates the schedule:
// each rank runs its stage's 1F1B order; a forward waits for the previous
// stage's forward of the micro-batch (all its replicas) and the message
// across the boundary, a backward for the next stage's backward. The k-th
// working rank, stage by stage, runs on core k mod cores (as het-run and
// the pipeline runtime bind them: het/Support/CoreBinding.h); the ranks
// computing on one core at any moment share it equally (processor
// sharing, as the kernel's scheduler does over its slices). Each rank's
// passes are scaled by its own draw of any noise.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_SHAREDHOSTSCHEDULE_H
#define HET_PLAN_SHAREDHOSTSCHEDULE_H

#include <functional>
#include <vector>

namespace het::plan {

struct SharedHostStage {
  /// Per rank of the stage: seconds of one micro-batch's forward and
  /// backward on a core of its own.
  std::vector<double> fwd, bwd;
  /// Seconds for a message across the boundary to the next stage (either
  /// direction); unused for the last stage.
  double messageToNext = 0;
  /// Seconds of each rank's gradient sync and optimizer step after its
  /// last backward, on its core like the passes (0: none); the other
  /// stages' backwards go on meanwhile.
  double finish = 0;
};

/// One forward or backward of one rank, as simulated.
struct SharedHostPass {
  int stage, rank; // rank: index among the stage's ranks
  bool backward;
  int micro;       // -1: the finishing sync and update
  double start, end;
};

/// Factor on the work of stage `stage`'s forward (backward false) or
/// backward of micro-batch `micro`, or (micro -1) of its finishing sync
/// and update (het-sim's noise and stragglers).
using SharedHostPassFactor = std::function<double(int stage, bool backward, int micro)>;

/// Seconds from the step's start until every rank has run its forwards
/// and backwards of `microBatches` micro-batches under 1F1B on `cores`,
/// and its finishing sync and update.
/// `factor` (if set) scales each pass's work; `passes` (if given) receives
/// every pass in the order they finished.
double simulateSharedHost(const std::vector<SharedHostStage> &stages, int microBatches,
                          int cores, const SharedHostPassFactor &factor = {},
                          std::vector<SharedHostPass> *passes = nullptr);

} // namespace het::plan

#endif
