//===- Utilization.cpp - achieved over stand-alone throughput -------------===//
#include "het/Sim/Utilization.h"

#include <algorithm>
#include <map>

namespace het::sim {
using namespace het::plan;

double standAloneThroughput(const CostModel &cost, int g, int mbs) {
  const LayerTable &t = cost.table(g, 1, std::max(1, mbs));
  const int L = int(cost.model().layers.size());
  double seconds = t.stageCompute(0, L) + t.stageUpdate(0, L);
  return seconds > 0 ? std::max(1, mbs) / seconds : 0;
}

Utilization utilization(const CostModel &cost, const Plan &plan, double iterationSeconds) {
  Utilization u;
  if (iterationSeconds <= 0)
    return u;
  u.achieved = double(plan.globalBatch) / iterationSeconds;
  // Each device at the micro-batch its stage gives it; idle devices of a
  // group at the largest micro-batch the group runs (1 if it runs none).
  const Cluster &cluster = cost.cluster();
  std::vector<int> used(cluster.groups.size(), 0), mbsOf(cluster.groups.size(), 1);
  for (int j = 0; j < int(plan.stages.size()); ++j) {
    CostModel::StageContext ctx = cost.contextOf(plan, j);
    for (const CostModel::Member &m : ctx.members) {
      int devices = m.replicas * ctx.tp;
      u.standAlone += devices * standAloneThroughput(cost, m.group, m.mbs);
      used[m.group] += devices;
      mbsOf[m.group] = std::max(mbsOf[m.group], m.mbs);
    }
  }
  u.clusterStandAlone = u.standAlone;
  for (size_t g = 0; g < cluster.groups.size(); ++g) {
    int idle = cluster.groups[g].count() - used[g];
    if (idle > 0)
      u.clusterStandAlone += idle * standAloneThroughput(cost, int(g), mbsOf[g]);
  }
  u.ratio = u.standAlone > 0 ? u.achieved / u.standAlone : 0;
  u.clusterRatio = u.clusterStandAlone > 0 ? u.achieved / u.clusterStandAlone : 0;
  return u;
}

} // namespace het::sim
