//===- MemorySavers.cpp - the savers a plan needs to fit -------------------===//

#include "het/Plan/MemorySavers.h"

#include <vector>

namespace het::plan {

SaverChoice chooseMemorySavers(CostModel &cost, const PlannerOptions &options,
                               bool mayRecompute, bool mayShard) {
  const Recompute givenRecompute = cost.setup().recompute;
  const int givenZero = cost.setup().zero;
  // In order of how much they change the step: a later combination must
  // be strictly better to win.
  std::vector<std::pair<int, Recompute>> candidates;
  for (Recompute r : {Recompute::None, Recompute::Full})
    for (int z = 0; z <= 3; ++z) {
      if ((!mayShard && z != givenZero) || (!mayRecompute && r != givenRecompute) ||
          (z == givenZero && r == givenRecompute))
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
  return best;
}

} // namespace het::plan
