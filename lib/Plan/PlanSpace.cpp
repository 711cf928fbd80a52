//===- PlanSpace.cpp ------------------------------------------------------===//
#include "PlanSpace.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace het::plan::space {

bool GroupOption::uniform() const {
  for (int r : replicas)
    if (r != replicas.front())
      return false;
  return true;
}

int Shape::stageCount() const {
  int s = 0;
  for (const auto &o : options)
    s += o.mixedWithNext ? 0 : o.stages;
  return s;
}

std::string Shape::key() const {
  std::string k = std::to_string(microBatches);
  for (size_t i = 0; i < order.size(); ++i) {
    k += "|" + std::to_string(order[i]) + ":" + std::to_string(options[i].tp) + "x";
    for (size_t s = 0; s < options[i].replicas.size(); ++s)
      k += (s ? "," : "") + std::to_string(options[i].replicas[s]);
    if (options[i].mixedWithNext)
      k += "+";
  }
  return k;
}

bool Shape::valid(long samples) const {
  for (size_t i = 0; i < order.size(); ++i) {
    if (!options[i].mixedWithNext)
      continue;
    if (i + 1 >= order.size() || options[i].stages != 1 || options[i + 1].stages != 1 ||
        options[i].tp != options[i + 1].tp)
      return false;
  }
  if (samples > 0)
    for (const Slot &slot : expand(*this))
      if (slot.replicas() > samples)
        return false;
  return true;
}

int Slot::replicas() const {
  int total = 0;
  for (const Member &m : members)
    total += m.replicas;
  return total;
}

std::vector<Slot> expand(const Shape &shape) {
  std::vector<Slot> slots;
  bool joining = false; // the previous entry continues into this one
  for (size_t i = 0; i < shape.order.size(); ++i) {
    const GroupOption &o = shape.options[i];
    for (int s = 0; s < o.stages; ++s) {
      if (joining && s == 0) {
        slots.back().members.push_back({shape.order[i], o.replicas[s]});
        continue;
      }
      Slot slot;
      slot.tp = o.tp;
      slot.members.push_back({shape.order[i], o.replicas[s]});
      slots.push_back(slot);
    }
    joining = o.mixedWithNext;
  }
  return slots;
}

static std::vector<int> divisors(long n) {
  std::vector<int> d;
  for (long i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(int(i));
  return d;
}

/// Every way to write `n` as an ordered sum of `parts` positive integers.
static void compositions(int n, int parts, std::vector<int> &prefix,
                         std::vector<std::vector<int>> &out) {
  if (parts == 1) {
    prefix.push_back(n);
    out.push_back(prefix);
    prefix.pop_back();
    return;
  }
  for (int first = 1; first <= n - (parts - 1); ++first) {
    prefix.push_back(first);
    compositions(n - first, parts - 1, prefix, out);
    prefix.pop_back();
  }
}

std::vector<GroupOption> groupOptions(const Cluster &cluster, int g,
                                      const PlannerOptions &options,
                                      int layers) {
  const DeviceGroup &group = cluster.groups[g];
  int maxStages = options.maxStagesPerGroup > 0
                      ? std::min(options.maxStagesPerGroup, layers)
                      : layers;
  std::vector<GroupOption> out;
  for (int tp : options.tensorParallel) {
    if (tp < 1 || group.devicesPerNode % tp != 0)
      continue;
    int perTp = group.count() / tp;
    for (int s : divisors(perTp)) {
      if (s > maxStages)
        continue;
      out.push_back({tp, s, std::vector<int>(s, perTp / s)});
      // More replicas per stage than the step has samples cannot all work:
      // as many as there are samples, the group's other devices idle (a
      // small batch on a large cluster; het-run starts them idle).
      if (options.globalBatch > 0 && perTp / s > options.globalBatch)
        out.push_back({tp, s, std::vector<int>(s, int(options.globalBatch))});
    }
    // Stages of different widths: a small group's devices in every
    // composition (larger groups keep equal widths; their compositions
    // would swamp the search).
    if (options.unevenReplicas && perTp <= 8)
      for (int s = 2; s <= std::min(perTp, maxStages); ++s) {
        std::vector<std::vector<int>> splits;
        std::vector<int> prefix;
        compositions(perTp, s, prefix, splits);
        for (auto &split : splits) {
          GroupOption o{tp, s, split};
          if (!o.uniform())
            out.push_back(o);
        }
      }
  }
  return out;
}

std::vector<int> microBatchChoices(const PlannerOptions &options) {
  if (options.exactMicroBatches > 0)
    return options.globalBatch % options.exactMicroBatches == 0
               ? std::vector<int>{options.exactMicroBatches}
               : std::vector<int>{};
  std::vector<int> out;
  for (int d : divisors(options.globalBatch))
    if (options.maxMicroBatches <= 0 || d <= options.maxMicroBatches)
      out.push_back(d);
  return out;
}

// Calls `visit` for each ordered selection of groups (all of them, or every
// non-empty subset when allowed).
static void
forEachOrder(int groups, bool subsets,
             const std::function<void(const std::vector<int> &)> &visit) {
  for (unsigned mask = 1; mask < (1u << groups); ++mask) {
    if (!subsets && mask != (1u << groups) - 1)
      continue;
    std::vector<int> order;
    for (int g = 0; g < groups; ++g)
      if (mask & (1u << g))
        order.push_back(g);
    do
      visit(order);
    while (std::next_permutation(order.begin(), order.end()));
  }
}

double countShapes(const Cluster &cluster, const PlannerOptions &options,
                   int layers) {
  int k = int(cluster.groups.size());
  std::vector<double> sizes(k);
  for (int g = 0; g < k; ++g)
    sizes[g] = double(groupOptions(cluster, g, options, layers).size());
  double total = 0;
  for (unsigned mask = 1; mask < (1u << k); ++mask) {
    if (!options.allowSubsets && mask != (1u << k) - 1)
      continue;
    double product = 1, n = 0;
    for (int g = 0; g < k; ++g)
      if (mask & (1u << g)) {
        product *= sizes[g];
        ++n;
      }
    double perms = 1;
    for (int i = 2; i <= n; ++i)
      perms *= i;
    // Each pair of neighbours may also form one mixed stage.
    double joins = options.mixedStages && n > 1 ? std::pow(2.0, n - 1) : 1;
    total += perms * product * joins;
  }
  return total * double(microBatchChoices(options).size());
}

void forEachShape(const Cluster &cluster, const PlannerOptions &options,
                  int layers, const std::function<void(const Shape &)> &visit) {
  int k = int(cluster.groups.size());
  std::vector<std::vector<GroupOption>> opts(k);
  for (int g = 0; g < k; ++g)
    opts[g] = groupOptions(cluster, g, options, layers);
  std::vector<int> micro = microBatchChoices(options);
  forEachOrder(k, options.allowSubsets, [&](const std::vector<int> &order) {
    Shape shape;
    shape.order = order;
    shape.options.resize(order.size());
    // Then which neighbours form mixed stages: entries of one stage each
    // with the same tp.
    std::function<void(size_t)> join = [&](size_t i) {
      if (i + 1 >= order.size()) {
        if (shape.stageCount() > layers)
          return;
        for (int m : micro) {
          shape.microBatches = m;
          visit(shape);
        }
        return;
      }
      shape.options[i].mixedWithNext = false;
      join(i + 1);
      if (options.mixedStages && shape.options[i].stages == 1 &&
          shape.options[i + 1].stages == 1 &&
          shape.options[i].tp == shape.options[i + 1].tp) {
        shape.options[i].mixedWithNext = true;
        join(i + 1);
        shape.options[i].mixedWithNext = false;
      }
    };
    std::function<void(size_t, int)> pick = [&](size_t i, int stages) {
      if (i == order.size()) {
        join(0);
        return;
      }
      for (const auto &o : opts[order[i]]) {
        if (stages + o.stages > layers)
          continue;
        shape.options[i] = o;
        pick(i + 1, stages + o.stages);
      }
    };
    pick(0, 0);
  });
}

std::vector<ReplicaGroupPlan> shareMicroBatch(const CostModel &cost, const Slot &slot,
                                              long samples) {
  const int R = slot.replicas();
  std::vector<ReplicaGroupPlan> out;
  if (slot.members.size() == 1) {
    out.push_back({slot.members.front().group, slot.members.front().replicas, 0});
    return out;
  }
  // Speed of each kind: samples per second on the whole model at the even
  // share (the roofline or the measured profile of that kind).
  const int L = int(cost.model().layers.size());
  const int even = CostModel::microBatchPerReplica(samples, 1, R);
  std::vector<double> rate;
  double total = 0;
  for (const Slot::Member &m : slot.members) {
    const LayerTable &t = cost.table(m.group, slot.tp, even);
    double seconds = t.stageCompute(0, L);
    double r = seconds > 0 ? even / seconds : 1.0;
    rate.push_back(r);
    total += r * m.replicas;
  }
  // Each replica's ideal share, floored (at least one), then the remaining
  // samples one at a time to the largest remainders.
  struct Replica {
    int group;
    double ideal;
    long share;
  };
  std::vector<Replica> replicas;
  long given = 0;
  for (size_t k = 0; k < slot.members.size(); ++k)
    for (int r = 0; r < slot.members[k].replicas; ++r) {
      double ideal = double(samples) * rate[k] / total;
      long share = std::max(1L, long(std::floor(ideal)));
      replicas.push_back({slot.members[k].group, ideal, share});
      given += share;
    }
  while (given < samples) {
    size_t best = 0;
    for (size_t i = 1; i < replicas.size(); ++i)
      if (replicas[i].ideal - replicas[i].share > replicas[best].ideal - replicas[best].share)
        best = i;
    ++replicas[best].share;
    ++given;
  }
  while (given > samples) { // only when the floors of one each overshoot
    size_t best = 0;
    for (size_t i = 1; i < replicas.size(); ++i)
      if (replicas[i].share - replicas[i].ideal > replicas[best].share - replicas[best].ideal &&
          replicas[i].share > 1)
        best = i;
    if (replicas[best].share <= 1)
      break;
    --replicas[best].share;
    --given;
  }
  // Consecutive replicas of one group with one share form one entry.
  for (const Replica &r : replicas) {
    if (!out.empty() && out.back().group == r.group && out.back().samples == r.share)
      ++out.back().replicas;
    else
      out.push_back({r.group, 1, int(r.share)});
  }
  return out;
}

std::vector<CostModel::StageContext> stageContexts(const CostModel &cost, const Shape &shape,
                                                   long globalBatch) {
  std::vector<Slot> slots = expand(shape);
  Plan plan;
  plan.globalBatch = globalBatch;
  plan.microBatches = shape.microBatches;
  const long samples = globalBatch / std::max(1, shape.microBatches);
  for (const Slot &slot : slots) {
    StagePlan s;
    s.tensorParallel = slot.tp;
    s.replicaGroups = shareMicroBatch(cost, slot, samples);
    s.recompute = cost.setup().recompute;
    s.zero = cost.setup().zero;
    plan.stages.push_back(s);
  }
  std::vector<CostModel::StageContext> out;
  for (size_t j = 0; j < slots.size(); ++j) {
    out.push_back(cost.contextOf(plan, int(j)));
    out.back().bestAlgorithm = true; // the search picks each stage's algorithm
  }
  return out;
}

Plan makePlan(const CostModel &cost, const Shape &shape, const std::vector<int> &bounds,
              const std::vector<AllReduceAlgorithm> &algorithms, long globalBatch) {
  Plan plan;
  plan.globalBatch = globalBatch;
  plan.microBatches = shape.microBatches;
  plan.formats = cost.formats();
  const long samples = globalBatch / std::max(1, shape.microBatches);
  std::vector<Slot> slots = expand(shape);
  for (size_t j = 0; j < slots.size(); ++j) {
    StagePlan s;
    s.replicaGroups = shareMicroBatch(cost, slots[j], samples);
    s.tensorParallel = slots[j].tp;
    s.layerBegin = bounds[j];
    s.layerEnd = bounds[j + 1];
    s.allReduce = algorithms[j];
    s.recompute = cost.setup().recompute;
    s.zero = cost.setup().zero;
    plan.stages.push_back(s);
  }
  return plan;
}

} // namespace het::plan::space
