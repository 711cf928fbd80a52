//===- ExpertPlacement.h - experts spread over a stage's replicas -*- C++ -*-===//
//
// Expert parallelism as a planning decision: a stage whose layers hold a
// mixture of experts may give each replica group a block of the experts
// instead of every replica all of them. Each replica then keeps only its
// experts' weights, gradients and optimizer state, runs its experts over
// every replica's tokens routed to them, and exchanges rows with the
// others twice each way per micro-batch (CostModel prices all of it). How
// many experts each kind holds is not a rule of thumb: every assignment
// (at least one per replica, the same number on the replicas of a group,
// adding up to the layers' experts) is evaluated and the best by the
// objective wins, if it beats the stage without expert parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_EXPERTPLACEMENT_H
#define HET_PLAN_EXPERTPLACEMENT_H

#include "het/Plan/Planner.h"

namespace het::plan {

/// For each plan and each stage with mixture-of-experts layers (one count
/// of experts in all of them), two or more replicas, no tensor parallelism
/// and no ZeRO: the best assignment of experts to its replica groups, kept
/// where the whole plan fits and is better by `options.objective`. Plans
/// are sorted again where any changed. Returns how many stages took expert
/// parallelism.
int placeExperts(const CostModel &cost, const PlannerOptions &options,
                 std::vector<RankedPlan> &plans);

/// The experts of the mixture-of-experts layers of [b, e): their common
/// count, 0 when there are none or they differ.
int expertsOf(const ModelDesc &model, int b, int e);

} // namespace het::plan

#endif
