//===- Planner.h - search for the fastest plan that fits --------*- C++ -*-===//
//
// The search space: which device groups take part and in which order along
// the pipeline; per group a tensor-parallel degree (inside a node), a
// number of stages and the data-parallel replicas of each (equal, or for
// small groups any split of its devices); neighbouring groups whose stage
// they share (a mixed-kind stage, each replica's share of a micro-batch
// proportional to its speed); a contiguous, non-uniform layer range per
// stage; the number of micro-batches; the all-reduce algorithm of each
// stage's gradients.
// A "shape" fixes everything but the layer ranges; for each shape a Pareto
// dynamic program over (sum of stage times, slowest stage, slowest sync)
// finds the best ranges exactly, for the time, cost or energy objective
// (Objective.h) under a deadline or budget. Shapes are enumerated with a lower bound
// (branch and bound) when their number is below `exhaustiveLimit`, and
// searched locally (hill climbing from several starts) above it.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_PLANNER_H
#define HET_PLAN_PLANNER_H

#include "het/Plan/CostModel.h"
#include "het/Plan/Objective.h"
#include "het/Plan/Plan.h"

#include <string>
#include <vector>

namespace het::plan {

enum class SplitPolicy {
  Optimal, // non-uniform ranges from the dynamic program
  Uniform  // Megatron-style: every stage gets (almost) the same layer count
};

struct PlannerOptions {
  long globalBatch = 0;
  int topK = 3;
  SplitPolicy split = SplitPolicy::Optimal;
  std::vector<int> tensorParallel = {1, 2, 4, 8};
  int maxStagesPerGroup = 0;    // 0: up to the number of layers
  int maxMicroBatches = 0;      // 0: any divisor of the global batch
  int exactMicroBatches = 0;    // > 0: only this many micro-batches
  bool allowSubsets = true;     // may leave device groups unused
  /// Neighbouring groups may form one stage whose replicas are of both
  /// kinds, each replica's share of the micro-batch proportional to its
  /// kind's speed.
  bool mixedStages = true;
  /// A group's stages may have different replica counts (groups of at most
  /// 8 replicas; larger ones split evenly).
  bool unevenReplicas = true;
  double exhaustiveLimit = 2e5; // shapes; above it, local search
  /// What "best" means (time, cost or energy per iteration), and the
  /// deadline and budget every plan must meet.
  Objective objective;
};

struct RankedPlan {
  Plan plan;
  Evaluation evaluation;
  PlanEconomics economics; // price, energy and the objective's value
};

struct PlanResult {
  std::vector<RankedPlan> plans; // best first; empty if nothing fits
  bool exact = true;             // whole space searched (or bounded)
  double shapes = 0;             // size of the shape space
  long shapesEvaluated = 0, shapesPruned = 0;
  /// When no plan is found: the shapes that have a split fitting in memory
  /// but miss the objective's deadline or budget (0: nothing fits at all).
  long constraintMisses = 0;
  double seconds = 0;
  /// When nothing fits: the smallest, over all plans searched, of the
  /// largest memory excess of any device, and where it is.
  double smallestShortfallBytes = 0;
  std::string shortfallWhere;
};

/// Throws PlanError when the objective needs a price or power a group lacks
/// (checkObjectiveInputs).
PlanResult planPipeline(const CostModel &cost, const PlannerOptions &options);

/// The same space, every layer split enumerated and scored by
/// CostModel::evaluate: the reference the planner is tested against (its
/// smallestShortfallBytes too, when nothing fits).
PlanResult bruteForcePlan(const CostModel &cost, const PlannerOptions &options);

} // namespace het::plan

#endif
