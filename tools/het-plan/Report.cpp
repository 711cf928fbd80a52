//===- Report.cpp ---------------------------------------------------------===//
#include "Report.h"

#include <cstdio>

namespace het::plan {

std::string formatBytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  return buf;
}

std::string formatSeconds(double s) {
  char buf[32];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

void printModel(std::ostream &os, const ModelDesc &model) {
  char line[256];
  os << "model " << model.name << ": " << model.layers.size() << " layers, "
     << model.dtype << ", batch " << model.batch
     << " (FLOPs and bytes per sample)\n";
  std::snprintf(line, sizeof line,
                "  %-5s %-12s %12s %12s %12s %12s %12s %12s\n", "layer", "name",
                "fwd FLOPs", "bwd FLOPs", "params", "io B", "output B",
                "stash B");
  os << line;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const LayerDesc &l = model.layers[i];
    std::snprintf(line, sizeof line,
                  "  %-5zu %-12s %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g\n",
                  i, l.name.c_str(), l.fwdFlops, l.bwdFlops, l.params,
                  l.ioBytes, l.outputBytes, l.stashBytes);
    os << line;
  }
}

void printPlan(std::ostream &os, const CostModel &cost, const Plan &plan,
               const Evaluation &ev) {
  const Cluster &c = cost.cluster();
  char line[512];
  std::snprintf(
      line, sizeof line,
      "  %-5s %-10s %-12s %5s %3s %8s %-11s %5s %12s %10s %10s %21s\n", "stage",
      "group", "kind", "devs", "tp", "replicas", "layers", "mbs", "fwd+bwd ms",
      "p2p ms", "sync ms", "memory / capacity");
  os << line;
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StagePlan &s = plan.stages[j];
    const StageCost &sc = ev.stages[j];
    CostModel::StageContext ctx = cost.contextOf(plan, int(j));
    char layers[32];
    std::snprintf(layers, sizeof layers, "[%d, %d)", s.layerBegin, s.layerEnd);
    char mem[64];
    std::snprintf(mem, sizeof mem, "%.1f / %.1f GiB%s",
                  sc.memoryBytes / double(1ull << 30),
                  sc.capacityBytes / double(1ull << 30),
                  sc.memoryBytes > sc.capacityBytes ? " !" : "");
    // A stage on several groups gets a row per group; the costs are the
    // stage's (its slowest member's).
    for (size_t k = 0; k < s.replicaGroups.size(); ++k) {
      const ReplicaGroupPlan &m = s.replicaGroups[k];
      const DeviceGroup &g = c.groups[m.group];
      if (k == 0)
        std::snprintf(line, sizeof line,
                      "  s%-4zu %-10s %-12s %5d %3d %8d %-11s %5d %12.3f %10.3f "
                      "%10.3f %21s%s\n",
                      j, g.name.c_str(), g.kind.c_str(), m.replicas * s.tensorParallel,
                      s.tensorParallel, m.replicas, layers, ctx.members[k].mbs,
                      (sc.fwd + sc.bwd) * 1e3, sc.p2p * 1e3, sc.sync * 1e3, mem,
                      int(j) == ev.bottleneck ? "  <- bottleneck" : "");
      else
        std::snprintf(line, sizeof line, "  %-5s %-10s %-12s %5d %3d %8d %-11s %5d\n", "+",
                      g.name.c_str(), g.kind.c_str(), m.replicas * s.tensorParallel,
                      s.tensorParallel, m.replicas, "", ctx.members[k].mbs);
      os << line;
    }
  }
  std::snprintf(line, sizeof line, "  all-reduce per stage:");
  os << line;
  for (size_t j = 0; j < plan.stages.size(); ++j)
    os << " s" << j << "=" << toString(plan.stages[j].allReduce);
  os << "\n";
}

} // namespace het::plan
