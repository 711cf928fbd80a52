//===- MemorySavers.cpp - the savers a plan needs to fit -------------------===//

#include "het/Plan/MemorySavers.h"

#include <algorithm>
#include <vector>

namespace het::plan {

namespace {
/// Each stage keeps only the savers it needs: in turn, a stage drops
/// recomputation (when it may) and then lowers its ZeRO level (when it
/// may) while the whole plan still fits and is no worse by the objective.
/// Memory differs by stage (under 1F1B the first stages hold the most
/// micro-batches in flight), and each saver costs time where it is used.
void relaxPerStage(const CostModel &cost, const PlannerOptions &options, bool mayRecompute,
                   bool mayShard, RankedPlan &r) {
  auto tryWith = [&](size_t j, Recompute recompute, int zero) {
    Plan p = r.plan;
    p.stages[j].recompute = recompute;
    p.stages[j].zero = zero;
    Evaluation ev = cost.evaluate(p);
    if (!ev.fits || !ev.problem.empty())
      return false;
    PlanEconomics economics = assessPlan(cost, p, ev, options.objective);
    if (!economics.violated.empty() || economics.objective > r.economics.objective)
      return false;
    r.plan = std::move(p);
    r.evaluation = std::move(ev);
    r.economics = economics;
    return true;
  };
  const bool selective = cost.model().pricesSelective();
  for (size_t j = 0; j < r.plan.stages.size(); ++j) {
    // Full, then selective (which keeps the products' results), then none.
    if (mayRecompute && r.plan.stages[j].recompute == Recompute::Full && selective)
      tryWith(j, Recompute::Selective, r.plan.stages[j].zero);
    if (mayRecompute && r.plan.stages[j].recompute != Recompute::None)
      tryWith(j, Recompute::None, r.plan.stages[j].zero);
    while (mayShard && r.plan.stages[j].zero > 0 &&
           tryWith(j, r.plan.stages[j].recompute, r.plan.stages[j].zero - 1)) {
    }
  }
}
} // namespace

SaverChoice chooseMemorySavers(CostModel &cost, const PlannerOptions &options,
                               bool mayRecompute, bool mayShard) {
  const Recompute givenRecompute = cost.setup().recompute;
  const int givenZero = cost.setup().zero;
  // In order of how much they change the step: a later combination must
  // be strictly better to win.
  std::vector<std::pair<int, Recompute>> candidates;
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    for (int z = 0; z <= 3; ++z) {
      if ((!mayShard && z != givenZero) || (!mayRecompute && r != givenRecompute) ||
          (z == givenZero && r == givenRecompute) ||
          (r == Recompute::Selective && !cost.model().pricesSelective()))
        continue;
      candidates.push_back({z, r});
    }
  SaverChoice best;
  best.recompute = givenRecompute;
  best.zero = givenZero;
  for (auto [zero, recompute] : candidates) {
    cost.setZero(zero);
    cost.setRecompute(recompute);
    PlanResult planned = planPipeline(cost, options);
    if (planned.plans.empty())
      continue;
    if (!best.result.plans.empty() && planned.plans.front().economics.objective >=
                                          best.result.plans.front().economics.objective)
      continue;
    best.result = std::move(planned);
    best.zero = zero;
    best.recompute = recompute;
  }
  cost.setZero(best.zero);
  cost.setRecompute(best.recompute);
  for (RankedPlan &r : best.result.plans)
    relaxPerStage(cost, options, mayRecompute, mayShard, r);
  std::stable_sort(best.result.plans.begin(), best.result.plans.end(),
                   [](const RankedPlan &a, const RankedPlan &b) {
                     return a.economics.objective < b.economics.objective;
                   });
  return best;
}

} // namespace het::plan
