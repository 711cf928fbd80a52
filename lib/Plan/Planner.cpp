//===- Planner.cpp - branch and bound over shapes, local search at scale --===//
#include "het/Plan/Planner.h"
#include "PlanSpace.h"
#include "SplitSolver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

namespace het::plan {
using namespace space;

namespace {

struct Candidate {
  double objective;
  Shape shape;
  SplitResult split;
};

// The k best shapes seen so far (one plan per shape).
class TopK {
public:
  explicit TopK(int k) : k(std::max(1, k)) {}
  double cutoff() const {
    return int(best.size()) < k ? INFINITY : best.back().objective;
  }
  void offer(const Shape &shape, const SplitResult &split) {
    if (!split.feasible || split.objective >= cutoff())
      return;
    // Shapes that differ only where it does not change the time (the order
    // of groups behind one network) are one plan to the reader.
    for (const auto &c : best)
      if (std::fabs(c.objective - split.objective) <= 1e-12 * c.objective)
        return;
    best.push_back({split.objective, shape, split});
    std::stable_sort(best.begin(), best.end(),
                     [](const Candidate &a, const Candidate &b) {
                       return a.objective < b.objective;
                     });
    if (int(best.size()) > k)
      best.pop_back();
  }
  const std::vector<Candidate> &all() const { return best; }

private:
  int k;
  std::vector<Candidate> best;
};

// Tracks the least memory shortfall over infeasible shapes, for the "does
// not fit" report.
struct Shortfall {
  double bytes = INFINITY;
  std::string where;
  SplitPolicy policy = SplitPolicy::Optimal;
  double offer(const CostModel &cost, const SplitSolver &solver,
               const Shape &shape) {
    int stage = -1;
    double s = solver.minShortfall(shape, policy, stage);
    if (s < bytes && stage >= 0) {
      bytes = s;
      int group = expand(shape)[stage].group();
      where = "stage " + std::to_string(stage) + " on group '" +
              cost.cluster().groups[group].name + "' (" +
              cost.cluster().groups[group].kind + ")";
    }
    return s;
  }
};

// When no plan was found, says why for one shape: one that missed the
// deadline or budget and has a split that fits in memory counts as a limit
// miss; any other adds to the memory shortfall report.
void explainInfeasible(const CostModel &cost, const SplitSolver &solver, const Shape &shape,
                       bool missedLimits, Shortfall &shortfall, PlanResult &result) {
  if (missedLimits) {
    int stage = -1;
    if (solver.minShortfall(shape, shortfall.policy, stage) <= 0) {
      ++result.constraintMisses;
      return;
    }
  }
  shortfall.offer(cost, solver, shape);
}

void finish(const CostModel &cost, const PlannerOptions &options,
            const TopK &top, PlanResult &result) {
  for (const auto &c : top.all()) {
    RankedPlan r;
    r.plan = makePlan(cost, c.shape, c.split.bounds, c.split.algorithms,
                      options.globalBatch);
    r.evaluation = cost.evaluate(r.plan);
    r.economics = assessPlan(cost, r.plan, r.evaluation, options.objective);
    result.plans.push_back(std::move(r));
  }
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

// Hill climbing over shapes for spaces too large to enumerate: moves change
// one group's tensor-parallel degree or stage count, swap neighbours, add or
// drop a group, or change the micro-batch count.
void localSearch(const CostModel &cost, const PlannerOptions &options,
                 const SplitSolver &solver, TopK &top, Shortfall &shortfall,
                 PlanResult &result) {
  const Cluster &cluster = cost.cluster();
  const int k = int(cluster.groups.size());
  const int L = int(cost.model().layers.size());
  std::vector<std::vector<GroupOption>> opts(k);
  for (int g = 0; g < k; ++g)
    opts[g] = groupOptions(cluster, g, options, L);
  std::vector<int> micro = microBatchChoices(options);

  // Feasible shapes score their objective; infeasible ones sort after all
  // of them: those past the deadline or budget by how far (so the climb
  // can walk towards the limits), then those that do not fit in memory by
  // how far they are from fitting.
  // Only splits faster than `cutoff` matter (the current shape's time, or
  // the k-th best for the top-k list), so the dynamic program may prune at
  // the larger of the two; a pruned shape scores "no better".
  struct Seen {
    double value, cutoff;
  };
  std::map<std::string, Seen> seen;
  std::vector<Shape> missedLimits; // for the report when nothing is found
  auto score = [&](const Shape &s, double current) {
    double cutoff = std::max(current, top.cutoff());
    auto it = seen.find(s.key());
    if (it != seen.end() &&
        (it->second.value < 1e29 || it->second.cutoff >= cutoff))
      return it->second.value;
    double value;
    if (s.stageCount() > L || s.order.empty() ||
        !s.valid(options.globalBatch / std::max(1, s.microBatches))) {
      value = INFINITY;
    } else {
      ++result.shapesEvaluated;
      SplitResult split = solver.solve(s, options.split, cutoff);
      if (split.feasible) {
        top.offer(s, split);
        value = split.objective;
      } else if (split.pruned) {
        value = 1e29;
      } else if (split.missedLimits) {
        value = 1e29 * (2 + std::min(split.limitExcess, 8.0));
        if (!seen.count(s.key()))
          missedLimits.push_back(s);
      } else {
        value = 1e30 + shortfall.offer(cost, solver, s);
      }
    }
    seen[s.key()] = {value, cutoff};
    return value;
  };

  auto closestMicro = [&](int target) {
    int best = micro.front();
    for (int m : micro)
      if (std::abs(m - target) < std::abs(best - target))
        best = m;
    return best;
  };

  // Starts: all groups, largest memory first (early stages hold the most
  // activations), each at its largest tensor-parallel degree, with layers
  // shared in proportion to the group's FLOP/s and just enough stages for
  // that share to fit in memory (and, as a second start, twice as many).
  std::vector<int> byMemory;
  for (int g = 0; g < k; ++g)
    if (!opts[g].empty())
      byMemory.push_back(g);
  std::stable_sort(byMemory.begin(), byMemory.end(), [&](int a, int b) {
    return cluster.groups[a].spec->memoryGib >
           cluster.groups[b].spec->memoryGib;
  });
  const ModelDesc &model = cost.model();
  const double paramsPerLayer = model.totalParams() / L;
  double stashPerLayer = 0;
  for (const auto &l : model.layers)
    stashPerLayer += l.stashBytes / L;
  // 4 micro-batches per stage (a small bubble), or, when memory is tight,
  // enough that every replica gets about one sample (the least activation
  // memory held in flight).
  bool oneSamplePerReplica = false;
  auto startMicro = [&](const Shape &s) {
    int fewest = 1 << 30;
    for (const auto &o : s.options)
      for (int r : o.replicas)
        fewest = std::min(fewest, r);
    long target = 4L * std::max(1, s.stageCount());
    if (oneSamplePerReplica)
      target =
          std::max<long>(target, options.globalBatch / std::max(1, fewest));
    return closestMicro(int(std::min<long>(target, options.globalBatch)));
  };
  auto rate = [&](int g) {
    return cluster.groups[g].count() * cluster.groups[g].spec->flops(cost.format(g));
  };
  auto makeStart = [&](const std::vector<int> &groups, int widen) {
    double totalRate = 0;
    for (int g : groups)
      totalRate += rate(g);
    Shape s;
    for (int g : groups) {
      s.order.push_back(g);
      s.options.push_back(opts[g].back());
    }
    // Two rounds: the stage count sets the micro-batches in flight, which
    // set the activation memory, which sets the stage count.
    for (int round = 0; round < 2; ++round) {
      int S = std::max(1, s.stageCount());
      s.microBatches = startMicro(s);
      for (size_t i = 0; i < s.order.size(); ++i) {
        int g = s.order[i];
        int maxTp = 0;
        for (const auto &o : opts[g])
          maxTp = std::max(maxTp, o.tp);
        double share = rate(g) / totalRate;
        double layers = std::max(1.0, share * L);
        const GroupOption *pick = nullptr;
        for (const auto &o : opts[g]) {
          // (more replicas than samples cannot work: the option that idles
          // the rest of the group comes next)
          if (o.tp != maxTp || !o.uniform() || o.replicas.front() > options.globalBatch)
            continue;
          int mbs = CostModel::microBatchPerReplica(options.globalBatch,
                                                    s.microBatches, o.replicas.front());
          double perStage = std::ceil(layers / o.stages);
          double memory =
              perStage *
              (paramsPerLayer / o.tp * cost.setup().stateBytes(cost.format(g)) +
               std::min(S, s.microBatches) * mbs * stashPerLayer / o.tp);
          // Options come by ascending stage count: take the first that
          // fits (the last one if none does), never more stages than layers.
          if (pick && o.stages > layers)
            break;
          pick = &o;
          if (memory <= cost.capacityBytes(g))
            break;
        }
        if (pick)
          s.options[i] = *pick;
      }
    }
    // Never more stages than layers: drop the slowest groups (when groups
    // may be left out), then take stages away from the largest counts.
    while (options.allowSubsets && int(s.order.size()) > L) {
      size_t slowest = 0;
      for (size_t i = 1; i < s.order.size(); ++i)
        if (rate(s.order[i]) < rate(s.order[slowest]))
          slowest = i;
      s.order.erase(s.order.begin() + slowest);
      s.options.erase(s.options.begin() + slowest);
    }
    while (s.stageCount() > L) {
      size_t largest = 0;
      for (size_t i = 1; i < s.order.size(); ++i)
        if (s.options[i].stages > s.options[largest].stages)
          largest = i;
      if (s.options[largest].stages == 1)
        break;
      const GroupOption *fewer = nullptr;
      for (const auto &o : opts[s.order[largest]])
        if (o.tp == s.options[largest].tp &&
            o.stages < s.options[largest].stages &&
            (!fewer || o.stages > fewer->stages))
          fewer = &o;
      s.options[largest] = *fewer;
    }
    if (widen == 2)
      for (size_t i = 0; i < s.order.size(); ++i)
        for (const auto &o : opts[s.order[i]])
          if (o.tp == s.options[i].tp && o.stages >= 2 * s.options[i].stages) {
            s.options[i] = o;
            break;
          }
    s.microBatches = startMicro(s);
    return s;
  };

  auto climb = [&](Shape current) {
    double currentScore = score(current, INFINITY);
    for (bool improved = true; improved;) {
      improved = false;
      std::vector<Shape> moves;
      for (size_t i = 0; i < current.order.size(); ++i) {
        // One step in one coordinate: the next smaller or larger stage
        // count at this tensor-parallel degree, or the neighbouring degree
        // at the closest stage count.
        int g = current.order[i];
        const auto &c = current.options[i];
        const GroupOption *fewer = nullptr, *more = nullptr, *lessTp = nullptr,
                          *moreTp = nullptr;
        for (const auto &o : opts[g]) {
          if (o.tp == c.tp && o.stages < c.stages &&
              (!fewer || o.stages > fewer->stages))
            fewer = &o;
          if (o.tp == c.tp && o.stages > c.stages &&
              (!more || o.stages < more->stages))
            more = &o;
          auto closer = [&](const GroupOption *x) {
            return !x || std::abs(o.stages - c.stages) <
                             std::abs(x->stages - c.stages);
          };
          if (o.tp < c.tp && (!lessTp || o.tp > lessTp->tp ||
                              (o.tp == lessTp->tp && closer(lessTp))))
            lessTp = &o;
          if (o.tp > c.tp && (!moreTp || o.tp < moreTp->tp ||
                              (o.tp == moreTp->tp && closer(moreTp))))
            moreTp = &o;
        }
        for (const GroupOption *o : {fewer, more, lessTp, moreTp})
          if (o) {
            Shape n = current;
            bool joined = n.options[i].mixedWithNext;
            n.options[i] = *o;
            n.options[i].mixedWithNext = joined;
            moves.push_back(n);
          }
        if (i + 1 < current.order.size()) {
          Shape n = current;
          std::swap(n.order[i], n.order[i + 1]);
          std::swap(n.options[i], n.options[i + 1]);
          moves.push_back(n);
          // Join the two groups' stages into one mixed-kind stage, or part
          // them again.
          Shape joined = current;
          joined.options[i].mixedWithNext = !joined.options[i].mixedWithNext;
          if (options.mixedStages && joined.valid())
            moves.push_back(joined);
        }
        if (options.allowSubsets && current.order.size() > 1) {
          Shape n = current;
          n.order.erase(n.order.begin() + i);
          n.options.erase(n.options.begin() + i);
          moves.push_back(n);
        }
      }
      if (options.allowSubsets || current.order.size() < size_t(k))
        for (int g = 0; g < k; ++g) {
          if (opts[g].empty() ||
              std::count(current.order.begin(), current.order.end(), g))
            continue;
          for (size_t pos = 0; pos <= current.order.size(); ++pos) {
            Shape n = current;
            n.order.insert(n.order.begin() + pos, g);
            n.options.insert(n.options.begin() + pos, opts[g].back());
            moves.push_back(n);
          }
        }
      auto mi = std::find(micro.begin(), micro.end(), current.microBatches);
      if (mi != micro.begin()) {
        Shape n = current;
        n.microBatches = *(mi - 1);
        moves.push_back(n);
      }
      if (mi + 1 < micro.end()) {
        Shape n = current;
        n.microBatches = *(mi + 1);
        moves.push_back(n);
      }
      Shape bestMove;
      double bestScore = currentScore;
      for (const auto &n : moves) {
        double s = score(n, bestScore);
        if (s < bestScore) {
          bestScore = s;
          bestMove = n;
        }
      }
      if (bestScore < currentScore) {
        current = bestMove;
        currentScore = bestScore;
        improved = true;
      }
    }
  };

  // All groups first, then with smaller micro-batches; if that never fits,
  // each group alone and the two
  // fastest together (single-vendor plans often fit where mixed ones
  // started out too big).
  for (int widen : {1, 2})
    climb(makeStart(byMemory, widen));
  if (top.all().empty()) {
    oneSamplePerReplica = true;
    for (int widen : {1, 2})
      climb(makeStart(byMemory, widen));
  }
  // A kick: from the best shape, half the micro-batches (a jump single
  // steps rarely make, since it pays off only with other changes), then
  // climb again. (Doubling or halving every group's stage count, or
  // doubling the micro-batches, found nothing better on the examples.)
  if (!top.all().empty()) {
    Shape kicked = top.all().front().shape;
    kicked.microBatches = closestMicro(std::max(1, kicked.microBatches / 2));
    climb(kicked);
  }
  // Cost and energy often favour one kind alone (the cheapest or most
  // efficient per FLOP), far from the all-groups starts: climb from each
  // group alone too.
  const bool singleStarts =
      top.all().empty() || options.objective.kind != ObjectiveKind::Time;
  if (singleStarts && options.allowSubsets) {
    std::vector<int> byRate = byMemory;
    std::stable_sort(byRate.begin(), byRate.end(),
                     [&](int a, int b) { return rate(a) > rate(b); });
    for (int g : byRate)
      climb(makeStart({g}, 1));
    if (byRate.size() > 2)
      climb(makeStart({byRate[0], byRate[1]}, 1));
  }
  // Shapes in the order of their lower bounds, up to the k-th best time.
  auto scoreByBound = [&](std::vector<std::pair<double, Shape>> &shapes) {
    std::stable_sort(shapes.begin(), shapes.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &[bound, s] : shapes) {
      if (bound >= top.cutoff())
        break;
      score(s, INFINITY);
    }
  };
  // Every shape of each group alone, as the single-kind baselines search
  // them: a plan a baseline finds must be among the candidates, or het-plan
  // would print a baseline faster than its choice. (The climbs start at
  // each group's widest tensor-parallel degree, which the model may not
  // split, and from a shape that cannot be built at all they have no
  // direction.)
  if (options.allowSubsets) {
    std::vector<std::pair<double, Shape>> shapes;
    for (int g = 0; g < k; ++g)
      for (const GroupOption &o : opts[g])
        for (int m : micro) {
          Shape alone;
          alone.order = {g};
          alone.options = {o};
          alone.microBatches = m;
          if (alone.valid(options.globalBatch / m))
            shapes.push_back({solver.lowerBound(alone), alone});
        }
    scoreByBound(shapes);
  }
  // And every shape of the Megatron-style baseline's space (all groups,
  // each stage on one kind, every stage as wide as the others) where it is
  // small enough to enumerate: the split solver prices each as well as the
  // baseline's uniform split or better.
  {
    PlannerOptions megatron = options;
    megatron.allowSubsets = false;
    megatron.mixedStages = false;
    megatron.unevenReplicas = false;
    // (When nothing fits yet, where the climbs found nothing either, only a
    // small space: a model that fits nowhere would pay for all of it on
    // every memory-saver combination het-plan tries.)
    double count = countShapes(cluster, megatron, L);
    if (count <= options.exhaustiveLimit && (!top.all().empty() || count <= 500)) {
      std::vector<std::pair<double, Shape>> shapes;
      forEachShape(cluster, megatron, L, [&](const Shape &s) {
        shapes.push_back({solver.lowerBound(s), s});
      });
      scoreByBound(shapes);
    }
  }
  if (top.all().empty())
    for (const Shape &s : missedLimits)
      explainInfeasible(cost, solver, s, true, shortfall, result);
}

} // namespace

PlanResult planPipeline(const CostModel &cost, const PlannerOptions &options) {
  checkObjectiveInputs(cost.cluster(), options.objective);
  auto t0 = std::chrono::steady_clock::now();
  PlanResult result;
  const int L = int(cost.model().layers.size());
  SplitSolver solver(cost, options.globalBatch, options.objective);
  TopK top(options.topK);
  Shortfall shortfall;
  shortfall.policy = options.split;
  result.shapes = countShapes(cost.cluster(), options, L);

  if (result.shapes <= options.exhaustiveLimit) {
    // Branch and bound: shapes in order of their lower bound; stop when the
    // bound reaches the k-th best time found.
    std::vector<std::pair<double, Shape>> shapes;
    forEachShape(cost.cluster(), options, L, [&](const Shape &s) {
      shapes.push_back({solver.lowerBound(s), s});
    });
    std::stable_sort(
        shapes.begin(), shapes.end(),
        [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<std::pair<const Shape *, bool>> infeasible; // and whether it missed limits
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (shapes[i].first >= top.cutoff()) {
        result.shapesPruned += long(shapes.size() - i);
        break;
      }
      ++result.shapesEvaluated;
      SplitResult split =
          solver.solve(shapes[i].second, options.split, top.cutoff());
      top.offer(shapes[i].second, split);
      if (!split.feasible)
        infeasible.push_back({&shapes[i].second, split.missedLimits});
    }
    if (top.all().empty())
      for (const auto &[s, missed] : infeasible)
        explainInfeasible(cost, solver, *s, missed, shortfall, result);
  } else {
    result.exact = false;
    localSearch(cost, options, solver, top, shortfall, result);
  }
  finish(cost, options, top, result);
  if (result.plans.empty()) {
    result.smallestShortfallBytes = shortfall.bytes;
    result.shortfallWhere = shortfall.where;
    if (!std::isfinite(shortfall.bytes))
      result.shortfallWhere =
          "the search space is empty: every shape has more stages than the " +
          std::to_string(L) +
          " layers, or no tensor-parallel degree divides a group's devices "
          "per node";
  }
  result.seconds = secondsSince(t0);
  return result;
}

PlanResult bruteForcePlan(const CostModel &cost,
                          const PlannerOptions &options) {
  checkObjectiveInputs(cost.cluster(), options.objective);
  auto t0 = std::chrono::steady_clock::now();
  PlanResult result;
  const int L = int(cost.model().layers.size());
  TopK top(options.topK);
  result.shapes = countShapes(cost.cluster(), options, L);
  double shortfall = INFINITY;
  forEachShape(cost.cluster(), options, L, [&](const Shape &shape) {
    ++result.shapesEvaluated;
    const int S = shape.stageCount();
    if (!shape.valid(options.globalBatch / std::max(1, shape.microBatches)))
      return;
    std::vector<CostModel::StageContext> contexts =
        stageContexts(cost, shape, options.globalBatch);
    std::vector<int> bounds(S + 1, 0);
    bounds[S] = L;
    SplitResult best;
    // Every composition of L layers into S non-empty ranges, and for each
    // stage every all-reduce algorithm (they are independent, so the
    // per-stage fastest is the joint fastest; all three are still scored).
    std::function<void(int)> place = [&](int j) {
      if (j == S) {
        for (int variant = 0; variant < 3; ++variant) {
          std::vector<AllReduceAlgorithm> algs(S, AllReduceAlgorithm(variant));
          Plan plan = makePlan(cost, shape, bounds, algs, options.globalBatch);
          if (variant == 0) {
            // The cheapest algorithm per stage, as the planner picks it.
            for (int s = 0; s < S; ++s) {
              const LayerTable &t = *cost.tables(contexts[s]).front();
              double params = t.range(t.params, bounds[s], bounds[s + 1]);
              plan.stages[s].allReduce =
                  cost.bestAlgorithm(contexts[s].members, contexts[s].tp, params);
            }
          }
          Evaluation ev = cost.evaluate(plan);
          if (!ev.fits && ev.worstShortfallBytes > 0)
            shortfall = std::min(shortfall, ev.worstShortfallBytes);
          keepIfBetter(cost, plan, ev, options.objective, best);
        }
        return;
      }
      if (options.split == SplitPolicy::Uniform) {
        for (int s = 0; s < S; ++s)
          bounds[s + 1] = bounds[s] + L / S + (s < L % S ? 1 : 0);
        place(S);
        return;
      }
      for (int b = bounds[j] + 1; b + (S - j - 1) <= L; ++b) {
        if (j == S - 1 && b != L)
          continue;
        bounds[j + 1] = b;
        place(j + 1);
      }
      bounds[S] = L;
    };
    place(0);
    result.constraintMisses += best.missedLimits && !best.feasible;
    top.offer(shape, best);
  });
  finish(cost, options, top, result);
  if (result.plans.empty())
    result.smallestShortfallBytes = shortfall;
  result.seconds = secondsSince(t0);
  return result;
}

} // namespace het::plan
