//===- IterationSampler.cpp - noise, stragglers and link queues -----------===//
#include "het/Sim/IterationSampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace het::sim {
using namespace het::plan;

namespace {

/// One iteration's variation, drawn from its own generator, so that any
/// iteration can be replayed without the ones before it.
IterationVariation drawVariation(const Plan &plan, const Variability &v,
                                 std::mt19937_64 &rng, bool &straggled) {
  const int S = int(plan.stages.size());
  IterationVariation variation;
  variation.linkQueues = v.linkQueues;
  std::vector<double> stageFactor(S, 1.0);
  straggled = false;
  if (v.stragglerProbability > 0) {
    for (int j = 0; j < S; ++j) {
      int devices = plan.stages[j].replicas() * plan.stages[j].tensorParallel;
      double pStage = 1 - std::pow(1 - v.stragglerProbability, devices);
      if (std::uniform_real_distribution<double>(0, 1)(rng) < pStage) {
        stageFactor[j] = v.stragglerSlowdown;
        straggled = true;
      }
    }
  }
  if (v.noise > 0) {
    // Log-normal with mean 1: exp(N(-s^2/2, s)).
    auto normal = std::make_shared<std::normal_distribution<double>>(-v.noise * v.noise / 2,
                                                                    v.noise);
    auto gen = std::make_shared<std::mt19937_64>(rng());
    variation.passFactor = [normal, gen, stageFactor](int stage, bool, int) {
      return stageFactor[stage] * std::exp((*normal)(*gen));
    };
  } else if (straggled) {
    variation.passFactor = [stageFactor](int stage, bool, int) { return stageFactor[stage]; };
  }
  return variation;
}

double quantile(std::vector<double> sorted, double q) {
  if (sorted.empty())
    return 0;
  size_t k = size_t(std::ceil(q * double(sorted.size()))) - 1;
  return sorted[std::min(k, sorted.size() - 1)];
}

} // namespace

Timeline replayIteration(const CostModel &cost, const Plan &plan, const Evaluation &ev,
                         int index, const Variability &v) {
  std::mt19937_64 rng(v.seed * 0x9e3779b97f4a7c15ULL + uint64_t(index));
  bool straggled = false;
  IterationVariation variation = drawVariation(plan, v, rng, straggled);
  return simulateIteration(cost, plan, ev, variation);
}

IterationStats sampleIterations(const CostModel &cost, const Plan &plan, const Evaluation &ev,
                                int iterations, const Variability &v) {
  IterationStats stats;
  stats.times.reserve(iterations);
  for (int k = 0; k < iterations; ++k) {
    std::mt19937_64 rng(v.seed * 0x9e3779b97f4a7c15ULL + uint64_t(k));
    bool straggled = false;
    IterationVariation variation = drawVariation(plan, v, rng, straggled);
    stats.times.push_back(simulateIteration(cost, plan, ev, variation).end);
    stats.straggled += straggled;
  }
  if (stats.times.empty())
    return stats;
  std::vector<double> sorted = stats.times;
  std::sort(sorted.begin(), sorted.end());
  stats.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(sorted.size());
  stats.p50 = quantile(sorted, 0.5);
  stats.p90 = quantile(sorted, 0.9);
  stats.p99 = quantile(sorted, 0.99);
  stats.min = sorted.front();
  stats.max = sorted.back();
  stats.medianIndex = int(std::find(stats.times.begin(), stats.times.end(), stats.p50) -
                          stats.times.begin());
  return stats;
}

} // namespace het::sim
