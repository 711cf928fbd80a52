//===- SplitSolver.cpp ----------------------------------------------------===//
#include "SplitSolver.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace het::plan {
using namespace space;

namespace {
// sum: of alpha t + w over the stages so far (the objective's additive
// part; the time sum itself when alpha is 1 and there is no w); time: of t.
struct Label {
  double sum, time, maxT, sync;
  int prevLayer, prevIndex;
};

// Adds `n` to `front` unless a label there is at least as good in all
// terms (the time sum only with `byTime`); drops the labels `n` beats.
void insertPareto(std::vector<Label> &front, const Label &n, bool byTime) {
  auto noWorse = [&](const Label &a, const Label &b) {
    return a.sum <= b.sum && a.maxT <= b.maxT && a.sync <= b.sync &&
           (!byTime || a.time <= b.time);
  };
  for (const Label &l : front)
    if (noWorse(l, n))
      return;
  front.erase(std::remove_if(front.begin(), front.end(),
                             [&](const Label &l) { return noWorse(n, l); }),
              front.end());
  front.push_back(n);
}
} // namespace

SplitResult SplitSolver::solve(const Shape &shape, SplitPolicy policy,
                               double cutoff) const {
  const int S = shape.stageCount();
  const int L = int(cost.model().layers.size());
  const int m = shape.microBatches;
  SplitResult result;
  if (S == 0 || S > L || !shape.valid(globalBatch / std::max(1, m)))
    return result;
  auto ctx = stageContexts(cost, shape, globalBatch);
  const ObjectiveTerms terms = objectiveTerms(cost, ctx, objective.kind);
  if (!withinBudget(terms.pricePerHour, objective)) {
    result.missedLimits = true;
    result.limitExcess = terms.pricePerHour / objective.budgetPerHour - 1;
    return result;
  }
  const double alpha = terms.alpha, deadline = objective.deadlineSeconds;
  // Each stage's member tables; a mixed stage takes as long as its slowest
  // member over a range.
  std::vector<std::vector<const LayerTable *>> tables(S);
  for (int j = 0; j < S; ++j)
    tables[j] = cost.tables(ctx[j]);
  auto rangeTime = [&](int j, int a, int b) {
    double worst = 0;
    for (const LayerTable *t : tables[j])
      worst = std::max(worst, t->stageCompute(a, b));
    return worst;
  };
  // The objective's work term of stage j over [a, b) (energy: each
  // member's busy-minus-idle power x its busy seconds).
  auto rangeWork = [&](int j, int a, int b) {
    if (!terms.hasWork())
      return 0.0;
    double w = 0;
    for (size_t k = 0; k < tables[j].size(); ++k)
      w += terms.workWeight[j][k] * busySeconds(*tables[j][k], a, b, m);
    return w;
  };
  // Records a split the deadline rules out (at least `time` long).
  auto meetsDeadline = [&](double time) {
    if (withinDeadline(time, objective))
      return true;
    result.missedLimits = true;
    result.limitExcess = std::min(result.limitExcess, time / deadline - 1);
    return false;
  };

  if (sharesCores(shape)) {
    // evaluate simulates this shape on the shared cores: the closed form
    // below is neither its value nor a lower bound of it, so every split
    // the policy allows is scored by evaluate itself (few: the ranks of one
    // host bound the stage count). A partial split is dropped when a range
    // does not fit (longer ones cannot either) or when a bound on the
    // simulated time reaches the cutoff: one micro-batch passes every
    // layer (each at its cheapest kind), and each rank runs its m forwards
    // and backwards, then its sync and update, at most at full speed.
    std::vector<double> cheapest(L + 1, 0); // suffix sums
    for (int l = L - 1; l >= 0; --l) {
      double c = INFINITY;
      for (const auto &stageTables : tables)
        for (const LayerTable *t : stageTables)
          c = std::min(c, t->range(t->compute, l, l + 1));
      cheapest[l] = cheapest[l + 1] + c;
    }
    std::vector<int> bounds(S + 1, 0);
    bounds[S] = L;
    std::vector<double> chain(S + 1, 0), busiest(S + 1, 0);
    auto score = [&]() {
      std::vector<AllReduceAlgorithm> algorithms(S);
      for (int j = 0; j < S; ++j) {
        if (!cost.model().stageFits(bounds[j], bounds[j + 1], ctx[j].tp))
          return;
        cost.stageSync(tables[j], ctx[j], bounds[j], bounds[j + 1], &algorithms[j]);
      }
      Plan plan = makePlan(cost, shape, bounds, algorithms, globalBatch);
      keepIfBetter(cost, plan, cost.evaluate(plan), objective, result);
    };
    std::function<void(int)> place = [&](int j) {
      const int a = bounds[j];
      for (int b = j + 1 == S ? L : a + 1; b + (S - j - 1) <= L; ++b) {
        if (!cost.model().stageFits(a, b, ctx[j].tp))
          continue;
        StageCost c = cost.stageCost(tables[j], ctx[j], a, b);
        if (c.memoryBytes() > c.capacityBytes)
          break;
        chain[j + 1] = chain[j] + rangeTime(j, a, b);
        busiest[j + 1] =
            std::max(busiest[j], m * rangeTime(j, a, b) + c.sync + c.update);
        if (alpha * std::max(chain[j + 1] + cheapest[b], busiest[j + 1]) >= cutoff) {
          result.pruned = true;
          continue;
        }
        bounds[j + 1] = b;
        if (j + 1 == S)
          score();
        else
          place(j + 1);
      }
    };
    if (policy == SplitPolicy::Uniform) {
      for (int j = 0; j < S; ++j)
        bounds[j + 1] = bounds[j] + L / S + (j < L % S ? 1 : 0);
      score();
    } else {
      place(0);
    }
    return result;
  }

  if (policy == SplitPolicy::Uniform) {
    // Megatron-style: L / S layers each, the remainder to the first stages.
    std::vector<int> bounds(S + 1, 0);
    for (int j = 0; j < S; ++j)
      bounds[j + 1] = bounds[j] + L / S + (j < L % S ? 1 : 0);
    double sum = 0, maxT = -1, sync = 0, work = 0;
    std::vector<AllReduceAlgorithm> algorithms(S);
    for (int j = 0; j < S; ++j) {
      if (!cost.model().stageFits(bounds[j], bounds[j + 1], ctx[j].tp))
        return result;
      StageCost c = cost.stageCost(tables[j], ctx[j], bounds[j], bounds[j + 1],
                                   &algorithms[j]);
      if (c.memoryBytes() > c.capacityBytes)
        return result;
      sum += c.time();
      maxT = std::max(maxT, c.time());
      sync = std::max(sync, c.sync + c.update);
      work += rangeWork(j, bounds[j], bounds[j + 1]);
    }
    result.time = sum + (m - 1) * maxT + sync;
    if (!meetsDeadline(result.time))
      return result;
    result.feasible = true;
    result.objective = alpha * result.time + work;
    result.bounds = bounds;
    result.algorithms = algorithms;
    return result;
  }

  // Everything a stage's cost depends on besides its range, precomputed so
  // the inner loop is a few additions: sends per boundary, memory terms.
  // (The gradient sync is CostModel::stageSync's, as evaluate prices it:
  // measured all-reduces are not affine in the range's bytes.)
  struct Stage {
    std::vector<double> sendNext, sendPrev; // by boundary layer
    std::vector<double> capacity; // per member
  };
  std::vector<Stage> pre(S);
  for (int j = 0; j < S; ++j) {
    Stage &st = pre[j];
    st.sendNext.assign(L + 1, 0);
    st.sendPrev.assign(L + 1, 0);
    for (int l = 0; l <= L; ++l) {
      if (!ctx[j].nextGroups.empty())
        st.sendNext[l] = cost.boundaryTime(l, ctx[j], /*next=*/true);
      if (!ctx[j].prevGroups.empty())
        st.sendPrev[l] = cost.boundaryTime(l, ctx[j], /*next=*/false);
    }
    for (const auto &member : ctx[j].members)
      st.capacity.push_back(cost.capacityBytes(member.group));
  }
  // A lower bound on what stages j.. add to the sum for layers [l, L): each
  // layer at its cheapest remaining stage, a mixed stage counted by its
  // costliest member (its time over any range is at least that member's).
  std::vector<std::vector<double>> restMin(S + 1,
                                           std::vector<double>(L + 1, 0));
  std::vector<const LayerTable *> slowest(S);
  for (int j = 0; j < S; ++j)
    for (const LayerTable *t : tables[j])
      if (!slowest[j] || t->range(t->compute, 0, L) > slowest[j]->range(slowest[j]->compute, 0, L))
        slowest[j] = t;
  for (int j = S - 1; j >= 0; --j)
    for (int l = L - 1; l >= 0; --l) {
      double c = INFINITY;
      for (int k = j; k < S; ++k)
        c = std::min(c, slowest[k]->range(slowest[k]->compute, l, l + 1));
      restMin[j][l] = restMin[j][l + 1] + c;
    }

  // front[j][l]: labels of the first j stages covering layers [0, l).
  std::vector<std::vector<std::vector<Label>>> front(
      S + 1, std::vector<std::vector<Label>>(L + 1));
  front[0][0].push_back({0, 0, 0, 0, -1, -1});
  // With a work term the objective's sum no longer orders the time sums,
  // which a deadline needs.
  const bool byTime = deadline > 0 && (terms.hasWork() || alpha <= 0);
  for (int j = 0; j < S; ++j) {
    const int remaining = S - j - 1; // stages after this one
    const Stage &st = pre[j];
    const LayerTable &t = *tables[j].front();
    for (int a = j; a + 1 + remaining <= L; ++a) {
      if (front[j][a].empty())
        continue;
      // The most one layer of [a, b) holds only while it runs, and its
      // largest parameter tensor, per member (CostModel::memory).
      std::vector<double> working(tables[j].size(), 0.0), largest(tables[j].size(), 0.0),
          largestLayer(tables[j].size(), 0.0);
      for (int b = a + 1; b + remaining <= L; ++b) {
        double params = t.range(t.params, a, b);
        // Memory only grows with the range: longer ranges cannot fit either.
        bool fits = true;
        double update = 0;
        for (size_t k = 0; k < tables[j].size(); ++k) {
          const LayerTable &mt = *tables[j][k];
          if (size_t(b - 1) < mt.workingSet.size())
            working[k] = std::max(working[k], mt.workingSet[b - 1]);
          if (size_t(b - 1) < mt.largestTensor.size())
            largest[k] = std::max(largest[k], mt.largestTensor[b - 1]);
          largestLayer[k] = std::max(largestLayer[k], mt.range(mt.params, b - 1, b));
          const CostModel::StageContext &c = ctx[j];
          LayerTable::MemoryPlace at{c.members[k].mbs, c.inFlight, c.microBatches, c.zero,
                                     c.fraction(k)};
          double memory = mt.memory(params, mt.stashOf(a, b), mt.range(mt.data, a, b),
                                    working[k], largest[k], largestLayer[k], at)
                              .peak();
          fits &= memory <= st.capacity[k];
          update = std::max(update, mt.stageUpdate(a, b));
        }
        if (!fits)
          break;
        if (!cost.model().stageFits(a, b, ctx[j].tp))
          continue;
        double time = rangeTime(j, a, b) + st.sendNext[b] + st.sendPrev[a];
        const double sync = cost.stageSync(tables[j], ctx[j], a, b) + update;
        const double work = rangeWork(j, a, b);
        const double rest = restMin[j + 1][b];
        auto &next = front[j + 1][b];
        for (size_t i = 0; i < front[j][a].size(); ++i) {
          const Label &l = front[j][a][i];
          Label n{l.sum + alpha * time + work, l.time + time, std::max(l.maxT, time),
                  std::max(l.sync, sync), a, int(i)};
          // Later stages add at least `rest` to the time sum (and nothing
          // less than zero to the work), and the slowest stage is at least
          // the average: a partial plan whose bound reaches the cutoff, or
          // passes the deadline, cannot end below it.
          double timeSum = n.time + rest;
          double tail = (m - 1) * std::max(n.maxT, timeSum / S) + n.sync;
          if (!meetsDeadline(timeSum + tail))
            continue;
          if (n.sum + alpha * (rest + tail) >= cutoff) {
            result.pruned = true;
            continue;
          }
          insertPareto(next, n, byTime);
        }
      }
    }
  }
  const auto &last = front[S][L];
  int best = -1;
  for (size_t i = 0; i < last.size(); ++i) {
    double time = last[i].time + (m - 1) * last[i].maxT + last[i].sync;
    double obj = last[i].sum + alpha * ((m - 1) * last[i].maxT + last[i].sync);
    if (meetsDeadline(time) && obj < result.objective) {
      result.objective = obj;
      result.time = time;
      best = int(i);
    }
  }
  if (best < 0)
    return result;
  result.feasible = true;
  result.bounds.assign(S + 1, 0);
  result.bounds[S] = L;
  int layer = L, index = best;
  for (int j = S; j > 0; --j) {
    const Label &l = front[j][layer][index];
    result.bounds[j - 1] = l.prevLayer;
    layer = l.prevLayer;
    index = l.prevIndex;
  }
  result.algorithms.resize(S);
  for (int j = 0; j < S; ++j)
    cost.stageCost(tables[j], ctx[j], result.bounds[j], result.bounds[j + 1],
                   &result.algorithms[j]);
  return result;
}

void keepIfBetter(const CostModel &cost, const Plan &plan, const Evaluation &ev,
                  const Objective &objective, SplitResult &best) {
  if (!ev.fits)
    return;
  PlanEconomics economics = assessPlan(cost, plan, ev, objective);
  if (!economics.violated.empty()) {
    best.missedLimits = true;
    return;
  }
  if (economics.objective < best.objective) {
    best.feasible = true;
    best.objective = economics.objective;
    best.time = ev.iterationTime;
    best.bounds.clear();
    best.algorithms.clear();
    for (const StagePlan &s : plan.stages) {
      best.bounds.push_back(s.layerBegin);
      best.algorithms.push_back(s.allReduce);
    }
    best.bounds.push_back(plan.stages.empty() ? 0 : plan.stages.back().layerEnd);
  }
}

bool SplitSolver::sharesCores(const Shape &shape) const {
  const int S = shape.stageCount();
  const int L = int(cost.model().layers.size());
  if (S == 0 || S > L)
    return false;
  // Whether the ranks share cores depends on the shape alone (ranks, groups).
  std::vector<int> bounds(S + 1, 0);
  for (int j = 0; j < S; ++j)
    bounds[j + 1] = bounds[j] + L / S + (j < L % S ? 1 : 0);
  Plan plan = makePlan(cost, shape, bounds, std::vector<AllReduceAlgorithm>(S), globalBatch);
  std::vector<SharedHostStage> stages;
  int cores = 0;
  return cost.sharedHostStages(plan, {}, stages, cores);
}

double SplitSolver::lowerBound(const Shape &shape) const {
  const int S = shape.stageCount();
  const int L = int(cost.model().layers.size());
  const int m = shape.microBatches;
  if (S == 0 || !shape.valid(globalBatch / std::max(1, m)))
    return INFINITY;
  std::vector<double> cheapest(L, INFINITY);
  const std::vector<CostModel::StageContext> contexts = stageContexts(cost, shape, globalBatch);
  for (const CostModel::StageContext &ctx : contexts)
    for (const LayerTable *t : cost.tables(ctx))
      for (int l = 0; l < L; ++l)
        cheapest[l] = std::min(cheapest[l], t->range(t->compute, l, l + 1));
  double sum = 0;
  for (double c : cheapest)
    sum += c;
  // sum(t) >= sum, and max(t) >= sum(t) / S; work terms are not negative.
  double alpha = objectiveTerms(cost, contexts, objective.kind).alpha;
  // On shared cores (simulated): one micro-batch passes every layer, and
  // the busiest stage's ranks each run m micro-batches, at most at full
  // speed; the closed form's sum + (m-1) max does not bound the schedule.
  if (sharesCores(shape))
    return alpha * sum * std::max(1.0, double(m) / S);
  return alpha * sum * (1.0 + double(m - 1) / S);
}

double SplitSolver::minShortfall(const Shape &shape, SplitPolicy policy, int &stage) const {
  const int S = shape.stageCount();
  const int L = int(cost.model().layers.size());
  stage = -1;
  if (S == 0 || S > L || !shape.valid(globalBatch / std::max(1, shape.microBatches)))
    return INFINITY;
  auto ctx = stageContexts(cost, shape, globalBatch);
  std::vector<std::vector<const LayerTable *>> stageTables;
  for (const auto &c : ctx)
    stageTables.push_back(cost.tables(c));
  auto excessOf = [&](int j, int a, int b) {
    const std::vector<const LayerTable *> &tables = stageTables[j];
    double excess = 0;
    for (size_t k = 0; k < tables.size(); ++k) {
      double mem = cost.memoryBytes(*tables[k], a, b, ctx[j], k);
      excess = std::max(excess, mem - cost.capacityBytes(ctx[j].members[k].group));
    }
    return excess;
  };
  if (policy == SplitPolicy::Uniform) {
    double worst = 0;
    for (int j = 0, a = 0; j < S; ++j) {
      int b = a + L / S + (j < L % S ? 1 : 0);
      if (!cost.model().stageFits(a, b, ctx[j].tp))
        return INFINITY;
      double excess = excessOf(j, a, b);
      if (excess > worst || stage < 0) {
        worst = std::max(worst, excess);
        stage = j;
      }
      a = b;
    }
    return worst;
  }
  // worst[j][l]: the least possible largest excess of stages < j over [0, l).
  std::vector<std::vector<double>> worst(S + 1,
                                         std::vector<double>(L + 1, INFINITY));
  std::vector<std::vector<int>> where(S + 1, std::vector<int>(L + 1, -1));
  worst[0][0] = 0;
  for (int j = 0; j < S; ++j) {
    for (int a = j; a < L; ++a) {
      if (!std::isfinite(worst[j][a]))
        continue;
      for (int b = a + 1; b + (S - j - 1) <= L; ++b) {
        if (!cost.model().stageFits(a, b, ctx[j].tp))
          continue;
        double excess = excessOf(j, a, b);
        double w = std::max(worst[j][a], excess);
        if (w < worst[j + 1][b]) {
          worst[j + 1][b] = w;
          where[j + 1][b] = excess >= worst[j][a] ? j : where[j][a];
        }
      }
    }
  }
  stage = where[S][L];
  return worst[S][L];
}

} // namespace het::plan
