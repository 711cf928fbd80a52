//===- Explain.cpp - where a plan's predicted iteration goes --------------===//
//
// The closed form of CostModel::evaluate, read backwards: 1F1B over M
// micro-batches and S stages takes sum_j t_j + (M - 1) t_b, t_j a stage's
// forward + backward + sends per micro-batch and b the slowest stage; so
// the iteration is M t_b (the bottleneck's work and sends) + sum_{j != b}
// t_j (fill and drain) + the sync and update of the stage that ends last.
// On shared cores the pipeline is simulated instead, messages are
// latencies rather than a rank's work, and what it takes beyond the
// bottleneck's own work is fill, drain, messages and turns on the cores
// together.
//
//===----------------------------------------------------------------------===//

#include "het/Plan/Explain.h"

#include "het/Plan/Plan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace het::plan {

namespace {

std::string milliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

} // namespace

IterationBreakdown explainIteration(const Plan &plan, const Evaluation &ev) {
  IterationBreakdown out;
  out.iterationTime = ev.iterationTime;
  const int M = plan.microBatches;
  const int S = int(ev.stages.size());
  // On shared cores messages are latencies on the schedule's dependencies,
  // not work of the sending rank (SharedHostSchedule.h).
  const bool shared = ev.sharedCoresTime > 0;
  for (const StageCost &c : ev.stages)
    out.stages.push_back({M * (c.fwd + c.bwd), shared ? 0.0 : M * c.p2p, c.sync + c.update});
  if (S == 0 || ev.bottleneck < 0)
    return out;
  const int b = ev.bottleneck;
  const StageCost &bottleneck = ev.stages[b];
  const std::string sb = "s" + std::to_string(b);
  const std::string microBatches =
      std::to_string(M) + (M == 1 ? " micro-batch" : " micro-batches");
  out.parts.push_back({"compute", sb + "'s forward and backward",
                       sb + " (the bottleneck) computes " + microBatches + " x (forward " +
                           milliseconds(bottleneck.fwd) + " + backward " +
                           milliseconds(bottleneck.bwd) + ")",
                       M * (bottleneck.fwd + bottleneck.bwd)});
  if (bottleneck.p2p > 0 && !shared)
    out.parts.push_back({"sends", "its sends",
                         sb + " sends its boundary tensors, " + std::to_string(M) + " x " +
                             milliseconds(bottleneck.p2p),
                         M * bottleneck.p2p});
  double rest = ev.pipelineTime - M * (shared ? bottleneck.fwd + bottleneck.bwd : bottleneck.time());
  if (S > 1 || shared) {
    std::string what;
    if (shared) {
      what = "fill and drain, messages, and waiting for the host's shared cores (simulated)";
    } else {
      what = "fill and drain: one micro-batch through each other stage (";
      bool first = true;
      for (int j = 0; j < S; ++j)
        if (j != b) {
          what += (first ? "s" : ", s") + std::to_string(j) + " " +
                  milliseconds(ev.stages[j].time());
          first = false;
        }
      what += ")";
    }
    out.parts.push_back({"fill_drain", "fill and drain", what, rest});
  }
  // The sync and update after the last backward: the stage whose pair is
  // longest sets the closed form's; on shared cores, what they add there.
  int last = 0;
  for (int j = 1; j < S; ++j)
    if (ev.stages[j].sync + ev.stages[j].update >
        ev.stages[last].sync + ev.stages[last].update)
      last = j;
  const StageCost &l = ev.stages[last];
  if (shared) {
    out.parts.push_back({"sync_update", "sync and update",
                         "gradient syncs and optimizer updates beside the other stages' "
                         "backwards on the shared cores (s" + std::to_string(last) +
                             "'s: sync " + milliseconds(l.sync) + " + update " +
                             milliseconds(l.update) + ")",
                         ev.syncTime});
  } else {
    double total = l.sync + l.update;
    double sync = total > 0 ? ev.syncTime * l.sync / total : 0;
    const std::string stage = "s" + std::to_string(last);
    const std::string tied = "its tied parameters' gradients with the other stages holding them";
    if (l.sync > 0)
      out.parts.push_back({"sync", "gradient sync",
                           l.tiedSync >= l.sync ? "gradient sync of " + stage + "'s tied parameters with "
                                                      "the other stages holding them"
                           : l.tiedSync > 0     ? "gradient sync over " + stage + "'s replicas, and of " + tied
                                                : "gradient sync over " + stage + "'s replicas",
                           sync});
    out.parts.push_back({"update", "optimizer update", "optimizer update of s" + std::to_string(last),
                         ev.syncTime - sync});
  }
  return out;
}

double IterationBreakdown::idleFraction(size_t j) const {
  return iterationTime > 0 ? std::max(0.0, 1 - stages[j].busy() / iterationTime) : 0.0;
}

std::string summarizeBreakdown(const IterationBreakdown &breakdown) {
  if (breakdown.parts.empty() || breakdown.iterationTime <= 0)
    return "";
  auto percent = [](double share) {
    if (share > 0 && share < 0.005)
      return std::string("<1%");
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
    return std::string(buf);
  };
  std::string out;
  for (const IterationPart &p : breakdown.parts)
    out += (out.empty() ? "" : ", ") + p.label + " " +
           percent(p.seconds / breakdown.iterationTime);
  // The stage that waits most, where one does.
  int idlest = -1;
  for (size_t j = 0; j < breakdown.stages.size(); ++j)
    if (breakdown.idleFraction(j) > (idlest < 0 ? 0.0 : breakdown.idleFraction(idlest)))
      idlest = int(j);
  if (idlest >= 0 && breakdown.stages.size() > 1)
    out += "; s" + std::to_string(idlest) + " idles " + percent(breakdown.idleFraction(idlest)) +
           " of it";
  return out;
}

nlohmann::json breakdownToJson(const IterationBreakdown &breakdown) {
  nlohmann::json parts = nlohmann::json::array();
  for (const IterationPart &p : breakdown.parts)
    parts.push_back({{"part", p.name}, {"what", p.what}, {"seconds", p.seconds}});
  nlohmann::json stages = nlohmann::json::array();
  for (size_t j = 0; j < breakdown.stages.size(); ++j) {
    const StageBusy &s = breakdown.stages[j];
    stages.push_back({{"work_seconds", s.work},
                      {"send_seconds", s.sends},
                      {"sync_and_update_seconds", s.syncAndUpdate},
                      {"idle_fraction", breakdown.idleFraction(j)}});
  }
  return {{"iteration_seconds", breakdown.iterationTime}, {"parts", parts}, {"stages", stages}};
}

} // namespace het::plan
