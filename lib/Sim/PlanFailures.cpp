//===- PlanFailures.cpp - the failure model of one plan ---------------------===//
#include "het/Sim/PlanFailures.h"

#include <algorithm>

namespace het::sim {
using namespace het::plan;

PlanFailures failureModelOf(const CostModel &cost, const Plan &plan, const std::set<int> &spot,
                            const FailureAssumptions &a) {
  const Cluster &cluster = cost.cluster();
  PlanFailures out;
  double worstDeviceState = 0;
  for (int j = 0; j < int(plan.stages.size()); ++j) {
    const StagePlan &s = plan.stages[j];
    CostModel::StageContext ctx = cost.contextOf(plan, j);
    const LayerTable &t = *cost.tables(ctx).front();
    double perDevice =
        t.range(t.params, s.layerBegin, s.layerEnd) * cost.setup().stateBytesPerParam;
    worstDeviceState = std::max(worstDeviceState, perDevice);
    // One data-parallel copy of the stage is written (tp shards).
    out.stateBytes += perDevice * s.tensorParallel;
    for (const ReplicaGroupPlan &g : s.replicaGroups)
      out.devicesOf[g.group] += g.replicas * s.tensorParallel;
  }
  FailureModel &fm = out.model;
  for (const auto &[g, devices] : out.devicesOf) {
    const DeviceGroup &group = cluster.groups[g];
    auto it = a.mtbfOfKind.find(group.spec->name);
    fm.failuresPerHour += devices / (it == a.mtbfOfKind.end() ? a.mtbfHours : it->second);
    if (group.spot || spot.count(g)) {
      int nodes = (devices + group.devicesPerNode - 1) / group.devicesPerNode;
      fm.preemptionsPerHour += nodes * a.preemptionsPerNodeHour;
    }
    out.devices += devices;
  }
  fm.detectSeconds = a.detectSeconds;
  fm.restartSeconds = a.restartSeconds;
  fm.checkpointStallSeconds = worstDeviceState / (a.snapshotGBs * 1e9);
  fm.checkpointWriteSeconds = out.stateBytes / (a.storageGBs * 1e9);
  fm.loadSeconds = fm.checkpointWriteSeconds; // read back at about the write speed
  return out;
}

} // namespace het::sim
