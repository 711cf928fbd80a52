//===- ExpertPlacement.cpp - experts spread over a stage's replicas -------===//

#include "het/Plan/ExpertPlacement.h"

#include <algorithm>
#include <functional>

namespace het::plan {

int expertsOf(const ModelDesc &model, int b, int e) {
  int count = 0;
  for (int i = b; i < e && i < int(model.layers.size()); ++i) {
    int here = model.layers[i].experts.count;
    if (here == 0)
      continue;
    if (count != 0 && here != count)
      return 0;
    count = here;
  }
  return count;
}

namespace {

/// Every way to give the groups' replicas x_g >= 1 experts each with
/// sum_g replicas_g x_g = E.
void assignments(const std::vector<ReplicaGroupPlan> &groups, size_t g, int left,
                 std::vector<int> &x, const std::function<void(const std::vector<int> &)> &use) {
  if (g == groups.size()) {
    if (left == 0)
      use(x);
    return;
  }
  int after = 0; // the fewest the later groups need
  for (size_t h = g + 1; h < groups.size(); ++h)
    after += groups[h].replicas;
  for (int each = 1; each * groups[g].replicas + after <= left; ++each) {
    x[g] = each;
    assignments(groups, g + 1, left - each * groups[g].replicas, x, use);
  }
}

} // namespace

int placeExperts(const CostModel &cost, const PlannerOptions &options,
                 std::vector<RankedPlan> &plans) {
  int placed = 0;
  for (RankedPlan &r : plans) {
    for (size_t j = 0; j < r.plan.stages.size(); ++j) {
      // (A copy: an improvement replaces r.plan while the groups are walked.)
      const StagePlan st = r.plan.stages[j];
      int E = expertsOf(cost.model(), st.layerBegin, st.layerEnd);
      if (E == 0 || st.replicas() < 2 || st.replicas() > E || st.tensorParallel > 1 ||
          st.builtZero() > 0 || st.expertParallel())
        continue;
      std::vector<int> x(st.replicaGroups.size(), 0);
      bool improved = false;
      assignments(st.replicaGroups, 0, E, x, [&](const std::vector<int> &each) {
        Plan p = r.plan;
        for (size_t g = 0; g < each.size(); ++g)
          p.stages[j].replicaGroups[g].experts = each[g];
        Evaluation ev = cost.evaluate(p);
        if (!ev.fits || !ev.problem.empty())
          return;
        PlanEconomics economics = assessPlan(cost, p, ev, options.objective);
        if (!economics.violated.empty() || economics.objective >= r.economics.objective)
          return;
        r.plan = std::move(p);
        r.evaluation = std::move(ev);
        r.economics = economics;
        improved = true;
      });
      placed += improved;
    }
  }
  // (Plans no stage of which changed keep the planner's order.)
  if (placed > 0)
    std::stable_sort(plans.begin(), plans.end(), [](const RankedPlan &a, const RankedPlan &b) {
      return a.economics.objective < b.economics.objective;
    });
  return placed;
}

} // namespace het::plan
