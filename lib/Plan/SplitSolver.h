//===- SplitSolver.h - best layer ranges for one shape -------------------===//
//
// Private to lib/Plan. The iteration time sum(t) + (m-1) max(t) + max(sync)
// grows with each of its three terms, so a dynamic program over (stage,
// first free layer) that keeps, per state, every label not dominated in
// (sum, max, sync) finds the optimum exactly. The cost and energy
// objectives (Objective.h) are alpha x time + sum(w) with w additive over
// stages: the label's sum becomes sum(alpha t + w), and with a deadline its
// time sum(t) joins the dominance test. Stages whose memory does not fit
// are never formed; labels that cannot beat `cutoff` or meet the deadline
// are dropped.
//
//===----------------------------------------------------------------------===//
#ifndef HET_LIB_PLAN_SPLITSOLVER_H
#define HET_LIB_PLAN_SPLITSOLVER_H

#include "PlanSpace.h"
#include "het/Plan/Objective.h"

#include <cmath>

namespace het::plan {

struct SplitResult {
  bool feasible = false;
  bool pruned = false; // some split was dropped for reaching the cutoff
  /// The shape's devices cost more than the budget, or some split (whole or
  /// partial, memory unknown) was dropped for the deadline; `limitExcess`
  /// is by how much at least (relative), which guides local search.
  bool missedLimits = false;
  double limitExcess = INFINITY;
  double objective = INFINITY;    // in the objective's unit
  double time = INFINITY;         // iteration time of the best split
  std::vector<int> bounds;                    // S + 1 entries
  std::vector<AllReduceAlgorithm> algorithms; // per stage
};

/// Scores a whole plan by evaluate's cost (`ev`, evaluate(plan)) under
/// `objective` into `best`: a plan that does not fit is skipped, one that
/// misses the objective's limits marks `best.missedLimits`, a better one
/// replaces `best`'s split. (Brute force, and the solver on shapes whose
/// ranks share cores, score every split so.)
void keepIfBetter(const CostModel &cost, const Plan &plan, const Evaluation &ev,
                  const Objective &objective, SplitResult &best);

class SplitSolver {
public:
  SplitSolver(const CostModel &cost, long globalBatch, Objective objective = {})
      : cost(cost), globalBatch(globalBatch), objective(objective) {}

  SplitResult solve(const space::Shape &shape, SplitPolicy policy,
                    double cutoff) const;
  /// A lower bound on any split's objective: alpha x (every layer at its
  /// cheapest stage, spread perfectly over the stages).
  double lowerBound(const space::Shape &shape) const;
  /// The smallest possible worst memory excess over all splits the policy
  /// allows (a min-max dynamic program; the one split for Uniform), and the
  /// stage where it occurs.
  double minShortfall(const space::Shape &shape, SplitPolicy policy, int &stage) const;

private:
  /// Whether evaluate simulates the shape's iteration on the host's shared
  /// cores (CostModel::sharedHostStages: its ranks outnumber them), where
  /// the closed form sum(t) + (m-1) max(t) + max(sync) does not hold.
  bool sharesCores(const space::Shape &shape) const;
  const CostModel &cost;
  long globalBatch;
  Objective objective;
};

} // namespace het::plan

#endif
