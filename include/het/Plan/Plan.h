//===- Plan.h - a pipeline plan and its JSON form ---------------*- C++ -*-===//
#ifndef HET_PLAN_PLAN_H
#define HET_PLAN_PLAN_H

#include "het/Plan/Collectives.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace het::plan {

struct Cluster;
struct ModelDesc;

struct StagePlan {
  int group = 0;          // index into Cluster::groups
  int tensorParallel = 1; // devices per replica (inside one node)
  int replicas = 1;       // data-parallel copies
  int layerBegin = 0, layerEnd = 0;
  AllReduceAlgorithm allReduce = AllReduceAlgorithm::Ring;
};

struct Plan {
  long globalBatch = 1;
  int microBatches = 1;
  std::vector<StagePlan> stages;
};

/// Writes the documented plan JSON (docs/planner.md); group names, kinds,
/// counts and links are included so het-partition needs nothing else.
nlohmann::json planToJson(const Plan &plan, const Cluster &cluster,
                          const ModelDesc &model);
/// Reads a plan JSON against a cluster (group names) and a model (layers);
/// errors name the file and the field.
Plan planFromJson(const nlohmann::json &j, const std::string &file,
                  const Cluster &cluster, const ModelDesc &model);

} // namespace het::plan

#endif
