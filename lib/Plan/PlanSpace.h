//===- PlanSpace.h - the shapes the planner and brute force search -------===//
//
// Private to lib/Plan. A shape fixes everything in a plan except the layer
// ranges: the groups used and their order, each group's tensor-parallel
// degree, stage count and replicas per stage, which neighbouring groups
// form one stage together (a mixed-kind stage), and the number of
// micro-batches.
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
  int tp = 1, stages = 1;
  /// Replicas of each of the group's stages (`stages` entries); they add up
  /// to the group's devices / tp, or to fewer where a stage would have more
  /// replicas than the global batch has samples (the rest idle).
  std::vector<int> replicas = {1};
  /// This group's single stage and the next entry's form one stage whose
  /// replicas are of both kinds.
  bool mixedWithNext = false;
  bool operator==(const GroupOption &o) const {
    return tp == o.tp && stages == o.stages && replicas == o.replicas &&
           mixedWithNext == o.mixedWithNext;
  }
  bool uniform() const;
};

struct Shape {
  std::vector<int> order;           // group indices, pipeline order
  std::vector<GroupOption> options; // per entry of `order`
  int microBatches = 1;
  int stageCount() const;
  std::string key() const;
  /// Mixed entries are well formed (a single stage each, one tp), and no
  /// stage has more replicas than a micro-batch of `samples` has samples.
  bool valid(long samples = 0) const;
};

/// One pipeline stage of a shape: its replicas by group (a mixed stage has
/// several), all with the same tensor-parallel degree.
struct Slot {
  struct Member {
    int group, replicas;
  };
  std::vector<Member> members;
  int tp = 1;
  int replicas() const;
  int group() const { return members.front().group; }
};
std::vector<Slot> expand(const Shape &shape);

/// Every (tp, stages, replicas per stage) a group can take: tp from the
/// options that divides its devices per node, stages a divisor of count / tp
/// with equal replicas (and, where those outnumber the global batch's
/// samples, as many replicas as samples, the rest of the group idle), and
/// with options.unevenReplicas every other way to give each of 2+ stages at
/// least one of at most 8 replicas.
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

/// Each replica's share of a micro-batch of `samples` samples: even for a
/// stage on one group; for a mixed stage proportional to the speed of each
/// group's kind on the whole model (the cost model's time per sample at the
/// even share), rounded to whole samples (at least one each) that add up.
/// Replicas of one group with different shares become separate entries.
std::vector<ReplicaGroupPlan> shareMicroBatch(const CostModel &cost, const Slot &slot,
                                              long samples);
/// The cost model's context of each stage of a shape (members with their
/// shares, neighbours, in-flight micro-batches).
std::vector<CostModel::StageContext> stageContexts(const CostModel &cost, const Shape &shape,
                                                   long globalBatch);

/// Builds the plan for a shape and its layer bounds (bounds[j] = first layer
/// of stage j, bounds[S] = layers).
Plan makePlan(const CostModel &cost, const Shape &shape, const std::vector<int> &bounds,
              const std::vector<AllReduceAlgorithm> &algorithms, long globalBatch);

} // namespace het::plan::space

#endif
