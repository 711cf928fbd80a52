//===- IterationSimulation.cpp - one 1F1B iteration, pass by pass ---------===//
#include "het/Plan/IterationSimulation.h"

#include <algorithm>

namespace het::plan {

namespace {

/// Each stage's gradient sync and optimizer step after its last backward.
void appendSyncs(const Evaluation &ev, const IterationVariation &variation,
                 const std::vector<double> &lastPass, Timeline &timeline) {
  for (size_t j = 0; j < lastPass.size(); ++j) {
    double t = lastPass[j];
    double sync = ev.stages[j].sync + ev.stages[j].update;
    if (!variation.syncFactor.empty())
      sync *= variation.syncFactor[j];
    if (sync > 0)
      timeline.boxes.push_back({int(j), t, t + sync, "sync", 0});
    timeline.end = std::max(timeline.end, t + sync);
  }
}

/// The iteration when its ranks share one host's cores: the processor-
/// sharing schedule the cost model priced it by, each stage's sync and
/// update on its ranks' cores after their last backward, with the
/// variation's factors on each pass's work (link queues do not apply: the
/// messages stay on the host). The chart shows each stage's first rank.
Timeline simulateOnSharedCores(const Plan &plan, const std::vector<SharedHostStage> &stages,
                               int cores, const IterationVariation &variation) {
  SharedHostPassFactor factor = [&](int stage, bool backward, int micro) {
    if (micro < 0)
      return variation.syncFactor.empty() ? 1.0 : variation.syncFactor[size_t(stage)];
    return variation.passFactor ? variation.passFactor(stage, backward, micro) : 1.0;
  };
  std::vector<SharedHostPass> passes;
  Timeline timeline;
  timeline.end = simulateSharedHost(stages, plan.microBatches, cores, factor, &passes);
  timeline.busy.assign(stages.size(), 0);
  for (const SharedHostPass &p : passes) {
    if (p.rank != 0)
      continue;
    timeline.boxes.push_back(
        {p.stage, p.start, p.end, p.micro < 0 ? "sync" : p.backward ? "B" : "F", std::max(0, p.micro)});
    if (p.micro >= 0)
      timeline.busy[p.stage] += p.end - p.start;
  }
  return timeline;
}

} // namespace

Timeline simulateIteration(const CostModel &cost, const Plan &plan, const Evaluation &ev,
                           const IterationVariation &variation) {
  const int S = int(plan.stages.size());
  const int m = plan.microBatches;
  std::vector<SharedHostStage> shared;
  int cores = 0;
  if (ev.sharedCoresTime > 0 && cost.sharedHostStages(plan, ev.stages, shared, cores))
    return simulateOnSharedCores(plan, shared, cores, variation);
  std::vector<double> F(S), B(S), sendNext(S, 0), sendPrev(S, 0);
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    F[j] = ev.stages[j].fwd;
    B[j] = ev.stages[j].bwd;
    CostModel::StageContext ctx = cost.contextOf(plan, j);
    if (j + 1 < S)
      sendNext[j] = cost.boundaryTime(s.layerEnd, ctx, /*next=*/true);
    if (j > 0)
      sendPrev[j] = cost.boundaryTime(s.layerBegin, ctx, /*next=*/false);
  }
  // Per stage, its 1F1B order: +i is forward of micro-batch i, -(i+1) backward.
  std::vector<std::vector<int>> order(S);
  for (int j = 0; j < S; ++j) {
    int warm = std::min(S - j - 1, m), f = 0, b = 0;
    for (; f < warm; ++f)
      order[j].push_back(f);
    while (b < m) {
      if (f < m)
        order[j].push_back(f++);
      order[j].push_back(-(++b));
    }
  }
  // When each pass's result arrives at the stage that needs it: activations
  // at stage j + 1, gradients at stage j - 1 (-1: not yet).
  std::vector<std::vector<double>> fArrives(S, std::vector<double>(m, -1)),
      bArrives(S, std::vector<double>(m, -1)), fDone(S, std::vector<double>(m, -1));
  // A stage issues its sends in its own order, so a queue per direction of
  // each link is first come, first served.
  std::vector<double> nextLinkFree(S, 0), prevLinkFree(S, 0);
  auto send = [&](double done, double duration, double &linkFree) {
    if (!variation.linkQueues)
      return done + duration;
    double arrives = std::max(done, linkFree) + duration;
    linkFree = arrives;
    return arrives;
  };
  std::vector<size_t> next(S, 0);
  std::vector<double> free(S, 0), busy(S, 0);
  std::vector<Box> boxes;
  boxes.reserve(size_t(S) * 2 * m + S);
  for (bool progress = true; progress;) {
    progress = false;
    for (int j = 0; j < S; ++j) {
      while (next[j] < order[j].size()) {
        int op = order[j][next[j]];
        bool backward = op < 0;
        int i = backward ? -op - 1 : op;
        double ready;
        if (!backward)
          ready = j == 0 ? 0 : fArrives[j - 1][i];
        else
          ready = j == S - 1 ? fDone[j][i] : bArrives[j + 1][i];
        if (ready < 0)
          break;
        double start = std::max(free[j], ready);
        double len = backward ? B[j] : F[j];
        if (variation.passFactor)
          len *= variation.passFactor(j, backward, i);
        double end = start + len;
        boxes.push_back({j, start, end, backward ? "B" : "F", i});
        busy[j] += len;
        if (!backward) {
          fDone[j][i] = end;
          if (j + 1 < S)
            fArrives[j][i] = send(end, sendNext[j], nextLinkFree[j]);
        } else if (j > 0) {
          bArrives[j][i] = send(end, sendPrev[j], prevLinkFree[j]);
        } else {
          bArrives[j][i] = end;
        }
        free[j] = end;
        ++next[j];
        progress = true;
      }
    }
  }
  Timeline timeline;
  timeline.busy = busy;
  timeline.boxes = std::move(boxes);
  appendSyncs(ev, variation, free, timeline);
  return timeline;
}

} // namespace het::plan
