//===- PartitionPlan.h - what het-partition needs from a plan -------------===//
//
// The plan JSON carries the device groups and links as well as the stages,
// so partitioning a program needs no catalog or cluster spec; plan=auto
// builds the same structure from the planner's answer.
//
// A stage is either `{"group": G, "replicas": R}` (R replicas of group G,
// an even share of each micro-batch) or `{"replica_groups": [{"group": G,
// "replicas": R, "micro_batch_size": B}, ...]}` (replicas on several
// groups, each taking B samples of every micro-batch); both may carry
// `"tensor_parallel": T`, the devices per replica (docs/planner.md).
//
//===----------------------------------------------------------------------===//
#ifndef HET_PARTITION_PARTITIONPLAN_H
#define HET_PARTITION_PARTITIONPLAN_H

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/Plan.h"

#include <string>
#include <vector>

namespace het::partition {

struct GroupInfo {
  std::string name, vendor, arch;
  long count = 1, nodes = 1;
  double memoryGib = 0;
  /// The device kind and the number formats it has ("formats"; empty: the
  /// plan does not say, and stage formats go unchecked).
  std::string kind;
  std::vector<std::string> formats;
  long devicesPerNode() const { return count / nodes; }
};
struct LinkInfo {
  std::string a, b;
  double bandwidthGbps = 0, latencyUs = 0;
};
/// Stages as the plan names them (lib/Plan's reader, shared with het-plan).
using StageInfo = het::plan::StageSpec;
using ReplicaGroupInfo = het::plan::StageSpec::Replicas;

struct PartitionPlan {
  std::string file; // where it was read from, for messages
  std::string cluster;
  long globalBatch = 0; // 0: the plan does not say
  long microBatches = 0;
  std::vector<GroupInfo> groups;
  std::vector<LinkInfo> links;
  std::vector<StageInfo> stages;
  const GroupInfo *group(const std::string &name) const;
};

/// Reads a plan JSON; errors (PlanError) name the file and the field,
/// among them a stage's "precision" that its group's kind lacks.
PartitionPlan readPartitionPlan(const std::string &path);
PartitionPlan fromPlan(const het::plan::Plan &plan,
                       const het::plan::Cluster &cluster);

/// Splits every micro-batch of `microBatchSamples` samples over each
/// stage's replicas: even shares where the plan gave none (the first
/// replicas take one more sample when it does not divide), else checks that
/// the plan's shares add up. Also checks what the runtime needs of the
/// devices: tensor parallelism inside a node and no group giving out more
/// devices than it has. Errors (PlanError) name the stage and the field.
void resolveShares(PartitionPlan &plan, long microBatchSamples);

/// The distinct per-replica shares of the plan, ascending.
std::vector<long> distinctShares(const PartitionPlan &plan);

} // namespace het::partition

#endif
