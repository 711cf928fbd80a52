//===- Plan.h - a pipeline plan and its JSON form ---------------*- C++ -*-===//
#ifndef HET_PLAN_PLAN_H
#define HET_PLAN_PLAN_H

#include "het/Plan/Collectives.h"

#include <nlohmann/json_fwd.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace het::plan {

/// Activation recomputation of a stage's layers (het-recompute,
/// docs/memory.md): none keeps every activation its backward reads; full
/// keeps each layer's input and recomputes the layer in the backward;
/// selective recomputes the cheap rest but keeps the products' results.
enum class Recompute { None, Selective, Full };
const char *toString(Recompute mode);
std::optional<Recompute> parseRecompute(const std::string &name);

struct Cluster;
struct ModelDesc;

/// Replicas of a stage on one device group.
struct ReplicaGroupPlan {
  int group = 0;    // index into Cluster::groups
  int replicas = 1; // data-parallel copies on this group
  int samples = 0;  // per replica and micro-batch; 0: an even share
  /// Expert parallelism: the experts of each mixture-of-experts layer each
  /// replica holds (the stage's replicas hold disjoint blocks); 0: all.
  int experts = 0;
};

/// One pipeline stage: a contiguous layer range run by data-parallel
/// replicas, possibly of several kinds (one ReplicaGroupPlan per device
/// group, each replica taking its share of every micro-batch), each replica
/// split over `tensorParallel` devices of one node.
struct StagePlan {
  std::vector<ReplicaGroupPlan> replicaGroups;
  int tensorParallel = 1; // devices per replica (inside one node)
  int layerBegin = 0, layerEnd = 0;
  AllReduceAlgorithm allReduce = AllReduceAlgorithm::Ring;
  Recompute recompute = Recompute::None;
  /// Sharded data parallelism over the replicas (het-shard-optimizer): 0
  /// none, 1 optimizer state, 2 and gradients, 3 and parameters, each
  /// replica holding blocks by its share of the batch.
  int zero = 0;

  StagePlan() = default;
  /// A stage on one group with an even split.
  StagePlan(int group, int tp, int replicas, int begin, int end,
            AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring)
      : replicaGroups{{group, replicas, 0}}, tensorParallel(tp),
        layerBegin(begin), layerEnd(end), allReduce(algorithm) {}

  /// All replicas, over every group.
  int replicas() const;
  /// The device group of a single-group stage (the first group otherwise).
  int group() const { return replicaGroups.front().group; }
  /// Replicas on more than one device group.
  bool mixed() const { return replicaGroups.size() > 1; }
  /// Shares that an even split would not give (written as replica_groups).
  bool explicitShares() const;
  /// The ZeRO level het-compile builds: `zero` where there are replicas to
  /// shard over (with tensor parallelism, over the replicas holding the
  /// same part), else 0.
  int builtZero() const { return replicas() > 1 ? zero : 0; }
  /// Its replicas hold blocks of the experts (`experts`).
  bool expertParallel() const { return replicaGroups.front().experts > 0; }
};

struct Plan {
  long globalBatch = 1;
  int microBatches = 1;
  std::vector<StagePlan> stages;
  /// The number format each cluster group trains in (NumberFormats.h),
  /// indexed like Cluster::groups; empty, or an empty entry: not stated
  /// (older plan files), the cost model's choice.
  std::vector<std::string> formats;
};

/// A stage as a plan file names it (device groups by name). Both readers of
/// plan files (het-plan --evaluate against a cluster spec, het-partition
/// against the plan's own group list) parse stages with readStageSpecs.
struct StageSpec {
  struct Replicas {
    std::string group;
    long replicas = 1;
    long samples = 0; // per replica and micro-batch; 0: an even share
    std::string precision; // the number format it trains in; "": not stated
    std::string field;     // where it is in the file, for errors: stages[0].replica_groups[1]
    /// Expert parallelism: the mixture-of-experts experts each replica holds
    /// (the stage's replicas hold disjoint blocks, in order); 0: every
    /// replica holds all of them.
    long experts = 0;
  };
  std::string name;
  std::vector<Replicas> replicaGroups;
  long tensorParallel = 1;
  long layerBegin = 0, layerEnd = 0;
  std::string allReduce = "ring";
  std::string recompute = "none"; // none, selective or full (checked on reading)
  long zero = 0;                  // 0-3 (checked on reading)
  /// The plan gave the shares (`replica_groups` with `micro_batch_size`).
  bool explicitShares = false;
  long replicas() const;
  /// Every replica takes the same number of samples.
  bool evenShares() const;
  /// Its replicas hold blocks of the experts (`experts` per replica group).
  bool expertParallel() const;
};

/// A stage's replica groups (`replicas[k]` replicas each) when a plan
/// gives no shares: each micro-batch of `microBatch` samples split evenly,
/// the first replicas taking one sample more where it does not divide (a
/// group then becomes two entries). Entries: {group index k, replicas,
/// samples each}. het-compile and het-plan read such a file alike.
struct EvenShare {
  size_t group = 0;
  long replicas = 0, samples = 0;
};
std::vector<EvenShare> evenShares(const std::vector<long> &replicas, long microBatch);

/// Reads the "stages" list of a plan JSON, in either form (docs/planner.md):
/// `{"group", "replicas"}` or `{"replica_groups": [{"group", "replicas",
/// "micro_batch_size"}, ...]}`, each with optional "tensor_parallel",
/// "layers", "name", "all_reduce", "recompute", "precision" (per replica
/// group in the second form, per stage in the first). `groupNames` lists the groups a stage may
/// name. Errors (PlanError) name the file and the field.
std::vector<StageSpec> readStageSpecs(const nlohmann::json &plan, const std::string &file,
                                      const std::vector<std::string> &groupNames);

/// Writes the documented plan JSON (docs/planner.md); group names, kinds,
/// counts and links are included so het-partition needs nothing else.
nlohmann::json planToJson(const Plan &plan, const Cluster &cluster,
                          const ModelDesc &model);
/// Reads a plan JSON against a cluster (group names) and a model (layers);
/// errors name the file and the field.
Plan planFromJson(const nlohmann::json &j, const std::string &file,
                  const Cluster &cluster, const ModelDesc &model);
/// planFromJson of the file at `path` (I/O and syntax errors name it).
Plan loadPlan(const std::string &path, const Cluster &cluster, const ModelDesc &model);

} // namespace het::plan

#endif
