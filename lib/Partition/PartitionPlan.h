//===- PartitionPlan.h - what het-partition needs from a plan -------------===//
//
// The plan JSON carries the device groups and links as well as the stages,
// so partitioning a program needs no catalog or cluster spec; plan=auto
// builds the same structure from the planner's answer.
//
//===----------------------------------------------------------------------===//
#ifndef HET_LIB_PARTITION_PARTITIONPLAN_H
#define HET_LIB_PARTITION_PARTITIONPLAN_H

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/Plan.h"

#include <string>
#include <vector>

namespace het::partition {

struct GroupInfo {
  std::string name, vendor, arch;
  long count = 1, nodes = 1;
  double memoryGib = 0;
};
struct LinkInfo {
  std::string a, b;
  double bandwidthGbps = 0, latencyUs = 0;
};
struct StageInfo {
  std::string name, group;
  long replicas = 1, layerBegin = 0, layerEnd = 0;
  std::string allReduce = "ring";
};
struct PartitionPlan {
  std::string cluster;
  std::vector<GroupInfo> groups;
  std::vector<LinkInfo> links;
  std::vector<StageInfo> stages;
};

/// Reads a plan JSON; errors (PlanError) name the file and the field.
PartitionPlan readPartitionPlan(const std::string &path);
PartitionPlan fromPlan(const het::plan::Plan &plan,
                       const het::plan::Cluster &cluster);

} // namespace het::partition

#endif
