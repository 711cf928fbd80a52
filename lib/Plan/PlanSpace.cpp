//===- PlanSpace.cpp ------------------------------------------------------===//
#include "PlanSpace.h"

#include <algorithm>
#include <numeric>

namespace het::plan::space {

int Shape::stageCount() const {
  int s = 0;
  for (const auto &o : options)
    s += o.stages;
  return s;
}

std::string Shape::key() const {
  std::string k = std::to_string(microBatches);
  for (size_t i = 0; i < order.size(); ++i)
    k += "|" + std::to_string(order[i]) + ":" + std::to_string(options[i].tp) +
         "x" + std::to_string(options[i].stages);
  return k;
}

std::vector<Slot> expand(const Shape &shape) {
  std::vector<Slot> slots;
  for (size_t i = 0; i < shape.order.size(); ++i)
    for (int s = 0; s < shape.options[i].stages; ++s)
      slots.push_back(
          {shape.order[i], shape.options[i].tp, shape.options[i].replicas});
  return slots;
}

static std::vector<int> divisors(long n) {
  std::vector<int> d;
  for (long i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(int(i));
  return d;
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
    for (int s : divisors(perTp))
      if (s <= maxStages)
        out.push_back({tp, s, perTp / s});
  }
  return out;
}

std::vector<int> microBatchChoices(const PlannerOptions &options) {
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
    total += perms * product;
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
    std::function<void(size_t, int)> pick = [&](size_t i, int stages) {
      if (i == order.size()) {
        for (int m : micro) {
          shape.microBatches = m;
          visit(shape);
        }
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

Plan makePlan(const Shape &shape, const std::vector<int> &bounds,
              const std::vector<AllReduceAlgorithm> &algorithms,
              long globalBatch) {
  Plan plan;
  plan.globalBatch = globalBatch;
  plan.microBatches = shape.microBatches;
  std::vector<Slot> slots = expand(shape);
  for (size_t j = 0; j < slots.size(); ++j) {
    StagePlan s;
    s.group = slots[j].group;
    s.tensorParallel = slots[j].tp;
    s.replicas = slots[j].replicas;
    s.layerBegin = bounds[j];
    s.layerEnd = bounds[j + 1];
    s.allReduce = algorithms[j];
    plan.stages.push_back(s);
  }
  return plan;
}

} // namespace het::plan::space
