//===- FrequencyScaling.cpp - per-stage clocks at a bounded slowdown -------===//
#include "het/Plan/FrequencyScaling.h"
#include "het/Plan/Objective.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace het::plan {

// r(f) = 0.3 + 0.7 f V(f)^2 with V(f) = 0.4 + 0.6 f: a static share of 30%
// of TDP, dynamic power f V^2 with the voltage falling to 70% at half clock.
const std::vector<std::pair<double, double>> kDefaultPowerCurve = {
    {0.5, 0.4715}, {0.6, 0.5426}, {0.7, 0.6295}, {0.8, 0.7337}, {0.9, 0.8567}, {1.0, 1.0}};

namespace {
const std::vector<std::pair<double, double>> &curveOf(const DeviceSpec &spec) {
  return spec.power.frequencyPower.empty() ? kDefaultPowerCurve : spec.power.frequencyPower;
}

// Linear interpolation; below the curve's first clock, its first power.
double relativePower(const std::vector<std::pair<double, double>> &curve, double clock) {
  if (clock <= curve.front().first)
    return curve.front().second;
  for (size_t i = 1; i < curve.size(); ++i)
    if (clock <= curve[i].first) {
      const auto &[f0, p0] = curve[i - 1];
      const auto &[f1, p1] = curve[i];
      return p0 + (p1 - p0) * (clock - f0) / (f1 - f0);
    }
  return curve.back().second;
}

// What the closed form needs of one stage, at full clock.
struct StageLoad {
  double compute = 0; // forward + backward per micro-batch (slowest member)
  double fixed = 0;   // sends per micro-batch
  double tail = 0;    // gradient sync + optimizer step
  struct Member {
    const DeviceSpec *spec;
    double devices, compute, update; // compute per micro-batch
  };
  std::vector<Member> members;
};
} // namespace

double busyWattsAt(const DeviceSpec &spec, double clock) {
  return std::max(idleWatts(spec), busyWatts(spec) * relativePower(curveOf(spec), clock));
}

FrequencyScaling scaleStageFrequencies(const CostModel &cost, const Plan &plan,
                                       const Evaluation &evaluation,
                                       const FrequencyScalingOptions &options) {
  const int S = int(plan.stages.size());
  const int m = plan.microBatches;
  std::vector<StageLoad> loads(S);
  std::set<std::string> assumed, unpowered;
  for (int j = 0; j < S; ++j) {
    const StageCost &c = evaluation.stages[j];
    loads[j].compute = c.fwd + c.bwd;
    loads[j].fixed = c.p2p;
    loads[j].tail = c.sync + c.update;
    CostModel::StageContext ctx = cost.contextOf(plan, j);
    std::vector<const LayerTable *> tables = cost.tables(ctx);
    for (size_t k = 0; k < ctx.members.size(); ++k) {
      const DeviceSpec *spec = cost.cluster().groups[ctx.members[k].group].spec;
      const LayerTable &t = *tables[k];
      const int b = plan.stages[j].layerBegin, e = plan.stages[j].layerEnd;
      loads[j].members.push_back({spec, double(ctx.members[k].replicas) * ctx.tp,
                                  t.stageCompute(b, e), t.stageUpdate(b, e)});
      if (!spec->hasPower())
        unpowered.insert(spec->name);
      else if (spec->power.frequencyPower.empty())
        assumed.insert(spec->name);
    }
  }
  auto timeAt = [&](const std::vector<double> &clocks) {
    double sum = 0, slowest = 0, tail = 0;
    for (int j = 0; j < S; ++j) {
      double t = loads[j].compute / clocks[j] + loads[j].fixed;
      sum += t;
      slowest = std::max(slowest, t);
      tail = std::max(tail, loads[j].tail);
    }
    return sum + (m - 1) * slowest + tail;
  };
  auto energyAt = [&](const std::vector<double> &clocks, double time) {
    double joules = 0;
    for (int j = 0; j < S; ++j)
      for (const auto &member : loads[j].members) {
        double idle = idleWatts(*member.spec);
        double busy = m * member.compute / clocks[j] + member.update;
        joules += member.devices *
                  (idle * time + (busyWattsAt(*member.spec, clocks[j]) - idle) * busy);
      }
    return joules;
  };

  FrequencyScaling result;
  result.assumedCurves.assign(assumed.begin(), assumed.end());
  result.unpowered.assign(unpowered.begin(), unpowered.end());
  result.clocks.assign(S, 1.0);
  result.timeBefore = result.timeAfter = timeAt(result.clocks);
  result.energyBefore = result.energyAfter = energyAt(result.clocks, result.timeBefore);
  const double limit = result.timeBefore * (1 + options.maxSlowdown);
  for (;;) {
    int bestStage = -1;
    double bestRatio = 0, bestTime = 0, bestEnergy = 0;
    for (int j = 0; j < S; ++j) {
      std::vector<double> trial = result.clocks;
      trial[j] = std::round((trial[j] - options.step) * 1e6) / 1e6;
      if (trial[j] < options.minClock - 1e-9)
        continue;
      double time = timeAt(trial);
      if (time > limit)
        continue;
      double energy = energyAt(trial, time);
      double saved = result.energyAfter - energy;
      if (saved <= 0)
        continue;
      double ratio = saved / std::max(time - result.timeAfter, 1e-12);
      if (ratio > bestRatio) {
        bestRatio = ratio;
        bestStage = j;
        bestTime = time;
        bestEnergy = energy;
      }
    }
    if (bestStage < 0)
      break;
    result.clocks[bestStage] = std::round((result.clocks[bestStage] - options.step) * 1e6) / 1e6;
    result.timeAfter = bestTime;
    result.energyAfter = bestEnergy;
  }
  return result;
}

} // namespace het::plan
