//===- PlanSpace.h - the shapes the planner and brute force search -------===//
//
// Private to lib/Plan. A shape fixes everything in a plan except the layer
// ranges: the groups used and their order, each group's tensor-parallel
// degree and stage count, and the number of micro-batches.
//
//===----------------------------------------------------------------------===//
#ifndef HET_LIB_PLAN_PLANSPACE_H
#define HET_LIB_PLAN_PLANSPACE_H

#include "het/Plan/Planner.h"

#include <functional>
#include <string>
#include <vector>

namespace het::plan::space {

struct GroupOption {
  int tp = 1, stages = 1, replicas = 1;
};

struct Shape {
  std::vector<int> order;           // group indices, pipeline order
  std::vector<GroupOption> options; // per entry of `order`
  int microBatches = 1;
  int stageCount() const;
  std::string key() const;
};

/// One pipeline stage of a shape.
struct Slot {
  int group, tp, replicas;
};
std::vector<Slot> expand(const Shape &shape);

/// Every (tp, stages) a group can take: tp from the options that divides its
/// devices per node, stages a divisor of count / tp.
std::vector<GroupOption> groupOptions(const Cluster &cluster, int g,
                                      const PlannerOptions &options,
                                      int layers);
/// Divisors of the global batch, capped by options.maxMicroBatches.
std::vector<int> microBatchChoices(const PlannerOptions &options);

/// Number of shapes in the space (an upper bound: ignores the cap of one
/// layer per stage).
double countShapes(const Cluster &cluster, const PlannerOptions &options,
                   int layers);
/// Calls `visit` on every shape with at most `layers` stages.
void forEachShape(const Cluster &cluster, const PlannerOptions &options,
                  int layers, const std::function<void(const Shape &)> &visit);

/// Builds the plan for a shape and its layer bounds (bounds[j] = first layer
/// of stage j, bounds[S] = layers).
Plan makePlan(const Shape &shape, const std::vector<int> &bounds,
              const std::vector<AllReduceAlgorithm> &algorithms,
              long globalBatch);

} // namespace het::plan::space

#endif
