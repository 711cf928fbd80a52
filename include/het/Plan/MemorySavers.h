//===- MemorySavers.h - the savers a plan needs to fit ----------*- C++ -*-===//
//
// When no plan fits in device memory as it is, the planner may shard state
// over each stage's replicas (ZeRO levels 1-3: more collective traffic) and
// recompute activations (full: another forward per backward). Which costs
// least depends on the model, the cluster and the objective, so each
// allowed combination is planned and the one whose best plan is best by
// the objective is taken; an equally good plan with fewer savers wins.
// Then each stage of its plans keeps only the savers it needs: a stage
// that fits without recomputation, or at a lower ZeRO level, drops them.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_MEMORYSAVERS_H
#define HET_PLAN_MEMORYSAVERS_H

#include "het/Plan/Planner.h"

namespace het::plan {

struct SaverChoice {
  PlanResult result; // no plans: nothing fits with any allowed saver
  Recompute recompute = Recompute::None;
  int zero = 0;
};

/// Plans with each allowed combination (recomputation none, selective
/// where the model prices it, or full when `mayRecompute`, else the setup's; ZeRO 0-3 when `mayShard`, else the
/// setup's) other than the setup's own, which found nothing. Leaves `cost`
/// set up with the chosen combination (unchanged when none fits).
SaverChoice chooseMemorySavers(CostModel &cost, const PlannerOptions &options,
                               bool mayRecompute, bool mayShard);

} // namespace het::plan

#endif
