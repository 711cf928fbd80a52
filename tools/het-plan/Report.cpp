//===- Report.cpp ---------------------------------------------------------===//
#include "Report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace het::plan {

std::string formatBytes(double bytes) {
  // GiB for device memories; MiB and KiB where GiB would print 0.0 (small
  // models, capped test kinds).
  char buf[32];
  if (bytes >= 0.05 * double(1ull << 30) || bytes == 0)
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  else if (bytes >= 0.05 * double(1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1ull << 20));
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
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

std::string describeFormats(const CostModel &cost) {
  // "mixed precision (bf16 on a100; fp16 with loss scaling on v100)"
  std::vector<std::pair<std::string, std::string>> byFormat; // format -> groups
  for (size_t g = 0; g < cost.formats().size(); ++g) {
    const std::string &f = cost.format(int(g));
    auto it = std::find_if(byFormat.begin(), byFormat.end(),
                           [&](const auto &entry) { return entry.first == f; });
    if (it == byFormat.end())
      it = byFormat.insert(byFormat.end(), {f, ""});
    it->second += (it->second.empty() ? "" : ", ") + cost.cluster().groups[g].name;
  }
  std::string out = std::string(toString(cost.setup().precision)) + " precision";
  if (byFormat.size() == 1 && byFormat.front().first == "fp32")
    return out;
  out += " (";
  for (size_t i = 0; i < byFormat.size(); ++i)
    out += (i ? "; " : "") + byFormat[i].first +
           (byFormat[i].first == "fp16" ? " with loss scaling" : "") + " on " +
           byFormat[i].second;
  return out + ")";
}

void printModel(std::ostream &os, const ModelDesc &model) {
  char line[256];
  os << "model " << model.name << ": " << model.layers.size() << " layers, "
     << model.dtype << ", batch " << model.batch
     << " (FLOPs and bytes per sample; stash: the results the backward reads; grad: the "
        "backward's activation gradients at once; attn probs: the f32 [.., Q, K] probabilities "
        "of its attention, held or not by how a kind runs it)\n";
  std::snprintf(line, sizeof line,
                "  %-5s %-12s %12s %12s %12s %12s %12s %12s %12s %12s\n", "layer", "name",
                "fwd FLOPs", "bwd FLOPs", "params", "io B", "output B",
                "stash B", "grad B", "attn probs B");
  os << line;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const LayerDesc &l = model.layers[i];
    std::snprintf(line, sizeof line,
                  "  %-5zu %-12s %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g\n",
                  i, l.name.c_str(), l.fwdFlops, l.bwdFlops, l.params,
                  l.ioBytes, l.outputBytes, l.stashBytes, l.gradientBytes,
                  l.attentionProbabilityBytes);
    os << line;
  }
}

void printPlan(std::ostream &os, const CostModel &cost, const Plan &plan,
               const Evaluation &ev) {
  const Cluster &c = cost.cluster();
  char line[512];
  std::snprintf(
      line, sizeof line,
      "  %-5s %-10s %-12s %-6s %5s %3s %8s %-11s %5s %12s %10s %10s %21s\n", "stage",
      "group", "kind", "format", "devs", "tp", "replicas", "layers", "mbs", "fwd+bwd ms",
      "p2p ms", "sync ms", "memory / capacity");
  os << line;
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StagePlan &s = plan.stages[j];
    const StageCost &sc = ev.stages[j];
    CostModel::StageContext ctx = cost.contextOf(plan, int(j));
    char layers[32];
    std::snprintf(layers, sizeof layers, "[%d, %d)", s.layerBegin, s.layerEnd);
    char mem[64];
    std::snprintf(mem, sizeof mem, "%s / %s%s", formatBytes(sc.memoryBytes()).c_str(),
                  formatBytes(sc.capacityBytes).c_str(),
                  sc.memoryBytes() > sc.capacityBytes ? " !" : "");
    // A stage on several groups gets a row per group; the costs are the
    // stage's (its slowest member's).
    for (size_t k = 0; k < s.replicaGroups.size(); ++k) {
      const ReplicaGroupPlan &m = s.replicaGroups[k];
      const DeviceGroup &g = c.groups[m.group];
      if (k == 0)
        std::snprintf(line, sizeof line,
                      "  s%-4zu %-10s %-12s %-6s %5d %3d %8d %-11s %5d %12.3f %10.3f "
                      "%10.3f %21s%s\n",
                      j, g.name.c_str(), g.kind.c_str(), cost.format(m.group).c_str(),
                      m.replicas * s.tensorParallel,
                      s.tensorParallel, m.replicas, layers, ctx.members[k].mbs,
                      (sc.fwd + sc.bwd) * 1e3, sc.p2p * 1e3, sc.sync * 1e3, mem,
                      int(j) == ev.bottleneck ? "  <- bottleneck" : "");
      else
        std::snprintf(line, sizeof line, "  %-5s %-10s %-12s %-6s %5d %3d %8d %-11s %5d\n", "+",
                      g.name.c_str(), g.kind.c_str(), cost.format(m.group).c_str(),
                      m.replicas * s.tensorParallel,
                      s.tensorParallel, m.replicas, "", ctx.members[k].mbs);
      os << line;
    }
  }
  std::snprintf(line, sizeof line, "  all-reduce per stage:");
  os << line;
  for (size_t j = 0; j < plan.stages.size(); ++j)
    os << " s" << j << "=" << toString(plan.stages[j].allReduce);
  os << "\n";
  // Activation recomputation (docs/memory.md), where a stage uses it.
  bool recomputes = false;
  for (const StagePlan &s : plan.stages)
    recomputes |= s.recompute != Recompute::None;
  if (recomputes) {
    os << "  activation recomputation per stage:";
    for (size_t j = 0; j < plan.stages.size(); ++j)
      os << " s" << j << "=" << toString(plan.stages[j].recompute);
    os << "\n";
  }
  // Sharded data parallelism, where a stage of several replicas uses it.
  bool shards = false;
  for (const StagePlan &s : plan.stages)
    shards |= s.builtZero() > 0;
  if (shards) {
    os << "  sharded data parallelism per stage:";
    for (size_t j = 0; j < plan.stages.size(); ++j) {
      const StagePlan &s = plan.stages[j];
      os << " s" << j << "=" << s.builtZero();
    }
    os << "\n";
  }
  // Expert parallelism: the experts each replica of a group holds.
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StagePlan &s = plan.stages[j];
    if (!s.expertParallel())
      continue;
    os << "  expert parallelism in s" << j << ":";
    for (const ReplicaGroupPlan &m : s.replicaGroups)
      os << " " << c.groups[m.group].name << " " << m.replicas << " x " << m.experts
         << " experts";
    os << "\n";
  }
}

void printBreakdown(std::ostream &os, const IterationBreakdown &breakdown) {
  char line[512];
  os << "  where the predicted " << formatSeconds(breakdown.iterationTime) << " go:\n";
  for (const IterationPart &p : breakdown.parts) {
    std::snprintf(line, sizeof line, "    %10s %5.1f%%  %s\n", formatSeconds(p.seconds).c_str(),
                  breakdown.iterationTime > 0 ? 100 * p.seconds / breakdown.iterationTime : 0.0,
                  p.what.c_str());
    os << line;
  }
  os << "  per stage, busy (work + sends + sync and update) and idle:";
  for (size_t j = 0; j < breakdown.stages.size(); ++j) {
    const StageBusy &s = breakdown.stages[j];
    double idle = breakdown.idleFraction(j);
    std::snprintf(line, sizeof line, "%s s%zu %s busy, %.0f%% idle", j ? ";" : "", j,
                  formatSeconds(s.busy()).c_str(), 100 * idle);
    os << line;
  }
  os << "\n";
}

void printMeasuredSplit(std::ostream &os, const IterationBreakdown &breakdown,
                        const std::vector<MeasuredStageSplit> &split, const std::string &file) {
  char line[512];
  os << "  measured (" << file << "), per stage and step, beside the predicted:\n";
  for (size_t j = 0; j < split.size() && j < breakdown.stages.size(); ++j) {
    const MeasuredStageSplit &m = split[j];
    const StageBusy &p = breakdown.stages[j];
    if (m.ranks == 0) {
      std::snprintf(line, sizeof line, "    s%zu: no rank reported\n", j);
      os << line;
      continue;
    }
    std::snprintf(line, sizeof line,
                  "    s%zu: measured %s = kernels %s + messages %s + collectives %s + runtime %s "
                  "(%d rank%s); predicted busy %s = work %s + sends %s + sync and update %s\n",
                  j, formatSeconds(m.step).c_str(), formatSeconds(m.kernels).c_str(),
                  formatSeconds(m.messages).c_str(), formatSeconds(m.collectives).c_str(),
                  formatSeconds(m.runtime).c_str(), m.ranks, m.ranks == 1 ? "" : "s",
                  formatSeconds(p.busy()).c_str(), formatSeconds(p.work).c_str(),
                  formatSeconds(p.sends).c_str(), formatSeconds(p.syncAndUpdate).c_str());
    os << line;
  }
}

std::string formatObjective(double value, ObjectiveKind kind) {
  char buf[48];
  switch (kind) {
  case ObjectiveKind::Time:
    return formatSeconds(value);
  case ObjectiveKind::Cost:
    std::snprintf(buf, sizeof buf, "USD %.4g", value);
    return buf;
  case ObjectiveKind::Energy:
    // A unit per scale, so that a small model's step (joules or less)
    // does not print as "0.000 kJ".
    if (value >= 1e6)
      std::snprintf(buf, sizeof buf, "%.3f MJ", value / 1e6);
    else if (value >= 1e3)
      std::snprintf(buf, sizeof buf, "%.3f kJ", value / 1e3);
    else if (value >= 1.0)
      std::snprintf(buf, sizeof buf, "%.3f J", value);
    else
      std::snprintf(buf, sizeof buf, "%.3f mJ", value * 1e3);
    return buf;
  }
  return "";
}

void printEconomics(std::ostream &os, const PlanEconomics &e) {
  if (!e.priced && !e.powered)
    return;
  char buf[256];
  os << "  " << e.devices << " devices";
  if (e.priced) {
    std::snprintf(buf, sizeof buf, ", USD %.2f per hour, USD %.4g per iteration", e.pricePerHour,
                  e.costPerIteration);
    os << buf;
  }
  if (e.powered) {
    std::snprintf(buf, sizeof buf, ", %s per iteration (%.1f kW on average)",
                  formatObjective(e.energyJoules, ObjectiveKind::Energy).c_str(),
                  e.averageWatts / 1e3);
    os << buf;
  }
  os << "\n";
}

void printFrequencyScaling(std::ostream &os, const FrequencyScaling &f, double maxSlowdown) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "frequency scaling (at most %.1f%% slower): energy %s -> %s per iteration "
                "(%.1f%% saved), iteration %+.2f%%\n",
                maxSlowdown * 100,
                formatObjective(f.energyBefore, ObjectiveKind::Energy).c_str(),
                formatObjective(f.energyAfter, ObjectiveKind::Energy).c_str(), f.saved() * 100,
                f.slowdown() * 100);
  os << buf << "  stage clocks:";
  for (size_t j = 0; j < f.clocks.size(); ++j) {
    std::snprintf(buf, sizeof buf, " s%zu %.2f", j, f.clocks[j]);
    os << buf;
  }
  os << "\n";
  if (!f.unpowered.empty()) {
    os << "  left out of the energy figures (no TDP in the catalog):";
    for (const auto &k : f.unpowered)
      os << " " << k;
    os << "\n";
  }
  if (!f.assumedCurves.empty()) {
    os << "  no published frequency-power curve, the default one assumed for:";
    for (const auto &k : f.assumedCurves)
      os << " " << k;
    os << "\n";
  }
}

nlohmann::json economicsToJson(const PlanEconomics &e) {
  nlohmann::json j = {{"devices", e.devices}, {"objective", e.objective}};
  if (e.priced) {
    j["price_usd_per_hour"] = e.pricePerHour;
    j["cost_usd_per_iteration"] = e.costPerIteration;
  }
  if (e.powered) {
    j["energy_j_per_iteration"] = e.energyJoules;
    j["average_w"] = e.averageWatts;
  }
  return j;
}

nlohmann::json frequencyScalingToJson(const FrequencyScaling &f, double maxSlowdown) {
  return {{"max_slowdown", maxSlowdown},
          {"clocks", f.clocks},
          {"iteration_s_before", f.timeBefore},
          {"iteration_s_after", f.timeAfter},
          {"energy_j_before", f.energyBefore},
          {"energy_j_after", f.energyAfter},
          {"energy_saved", f.saved()},
          {"assumed_power_curves", f.assumedCurves},
          {"unpowered_kinds", f.unpowered}};
}

} // namespace het::plan
