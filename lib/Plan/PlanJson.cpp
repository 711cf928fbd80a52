//===- PlanJson.cpp - the plan file format (docs/planner.md) --------------===//
#include "JsonUtil.h"
#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/ModelDesc.h"
#include "het/Plan/Plan.h"

namespace het::plan {
using namespace json_util;

json planToJson(const Plan &plan, const Cluster &cluster,
                const ModelDesc &model) {
  json groups = json::array(), links = json::array(), stages = json::array();
  for (const auto &g : cluster.groups)
    groups.push_back({{"name", g.name},
                      {"kind", g.kind},
                      {"vendor", g.spec->vendor},
                      {"arch", g.spec->arch},
                      {"count", g.count()},
                      {"devices_per_node", g.devicesPerNode},
                      {"nodes", g.nodes},
                      {"memory_gib", g.spec->memoryGib}});
  for (size_t a = 0; a < cluster.groups.size(); ++a)
    for (size_t b = a; b < cluster.groups.size(); ++b)
      links.push_back(
          {{"between", {cluster.groups[a].name, cluster.groups[b].name}},
           {"bandwidth_gbps", cluster.links[a][b].bandwidthGbps},
           {"latency_us", cluster.links[a][b].latencyUs}});
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StagePlan &s = plan.stages[j];
    stages.push_back({{"name", "s" + std::to_string(j)},
                      {"group", cluster.groups[s.group].name},
                      {"replicas", s.replicas},
                      {"tensor_parallel", s.tensorParallel},
                      {"layers", {s.layerBegin, s.layerEnd}},
                      {"micro_batch_size",
                       CostModel::microBatchPerReplica(
                           plan.globalBatch, plan.microBatches, s.replicas)},
                      {"all_reduce", toString(s.allReduce)}});
  }
  return {{"format", "het-plan/1"},
          {"cluster", cluster.name},
          {"model", model.name},
          {"layers", model.layers.size()},
          {"global_batch", plan.globalBatch},
          {"micro_batches", plan.microBatches},
          {"schedule", "1f1b"},
          {"groups", groups},
          {"links", links},
          {"stages", stages}};
}

Plan planFromJson(const json &j, const std::string &file,
                  const Cluster &cluster, const ModelDesc &model) {
  if (j.contains("format") && j["format"] != "het-plan/1")
    fail(file, "format", "expected \"het-plan/1\", not " + j["format"].dump());
  Plan plan;
  plan.globalBatch = integer(j, "global_batch", file, "", 1);
  plan.microBatches = int(integer(j, "micro_batches", file, "", 1));
  const json &stages = array(j, "stages", file, "");
  for (size_t i = 0; i < stages.size(); ++i) {
    const json &s = stages[i];
    std::string at = join("stages", i);
    StagePlan st;
    std::string group = string(s, "group", file, at);
    st.group = -1;
    std::string known;
    for (size_t g = 0; g < cluster.groups.size(); ++g) {
      known += (g ? ", " : "") + cluster.groups[g].name;
      if (cluster.groups[g].name == group)
        st.group = int(g);
    }
    if (st.group < 0)
      fail(file, join(at, "group"),
           "unknown group '" + group + "' (the cluster has: " + known + ")");
    st.replicas = int(integer(s, "replicas", file, at, 1));
    st.tensorParallel = s.contains("tensor_parallel")
                            ? int(integer(s, "tensor_parallel", file, at, 1))
                            : 1;
    const json &layers = array(s, "layers", file, at);
    if (layers.size() != 2 || !layers[0].is_number_integer() ||
        !layers[1].is_number_integer())
      fail(file, join(at, "layers"), "must be [begin, end)");
    st.layerBegin = layers[0].get<int>();
    st.layerEnd = layers[1].get<int>();
    if (st.layerBegin < 0 || st.layerEnd > int(model.layers.size()) ||
        st.layerBegin >= st.layerEnd)
      fail(file, join(at, "layers"),
           "must be a non-empty range inside [0, " +
               std::to_string(model.layers.size()) + ")");
    if (s.contains("all_reduce")) {
      std::string a = string(s, "all_reduce", file, at);
      if (!parseAllReduceAlgorithm(a, st.allReduce))
        fail(file, join(at, "all_reduce"),
             "unknown algorithm '" + a + "' (ring, tree, hierarchical)");
    }
    plan.stages.push_back(st);
  }
  return plan;
}

} // namespace het::plan
