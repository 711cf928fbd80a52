//===- PlanJson.cpp - the plan file format (docs/planner.md) --------------===//
#include "JsonUtil.h"
#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/ModelDesc.h"
#include "het/Plan/NumberFormats.h"
#include "het/Plan/Plan.h"

#include <algorithm>

namespace het::plan {
using namespace json_util;

long StageSpec::replicas() const {
  long total = 0;
  for (const Replicas &g : replicaGroups)
    total += g.replicas;
  return total;
}

bool StageSpec::expertParallel() const {
  return !replicaGroups.empty() && replicaGroups.front().experts > 0;
}

bool StageSpec::evenShares() const {
  for (const Replicas &g : replicaGroups)
    if (g.samples != replicaGroups.front().samples)
      return false;
  return true;
}

const char *toString(Recompute mode) {
  switch (mode) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "none";
}

std::optional<Recompute> parseRecompute(const std::string &name) {
  if (name == "none")
    return Recompute::None;
  if (name == "selective")
    return Recompute::Selective;
  if (name == "full")
    return Recompute::Full;
  return std::nullopt;
}

int StagePlan::replicas() const {
  int total = 0;
  for (const ReplicaGroupPlan &g : replicaGroups)
    total += g.replicas;
  return total;
}

bool StagePlan::explicitShares() const {
  return mixed() || replicaGroups.front().samples > 0;
}

std::vector<EvenShare> evenShares(const std::vector<long> &replicas, long microBatch) {
  long total = 0;
  for (long r : replicas)
    total += r;
  long base = microBatch / std::max(1L, total), extra = microBatch % std::max(1L, total);
  std::vector<EvenShare> shares;
  for (size_t k = 0; k < replicas.size(); ++k) {
    long more = std::min(extra, replicas[k]);
    extra -= more;
    if (more > 0)
      shares.push_back({k, more, base + 1});
    if (replicas[k] - more > 0)
      shares.push_back({k, replicas[k] - more, base});
  }
  return shares;
}

std::vector<StageSpec> readStageSpecs(const json &j, const std::string &file,
                                      const std::vector<std::string> &groupNames) {
  std::string known;
  for (const std::string &g : groupNames)
    known += (known.empty() ? "" : ", ") + g;
  auto groupName = [&](const json &o, const std::string &at) {
    std::string name = string(o, "group", file, at);
    if (std::find(groupNames.begin(), groupNames.end(), name) == groupNames.end())
      fail(file, join(at, "group"), "unknown group '" + name + "' (the groups are: " + known + ")");
    return name;
  };
  auto precisionOf = [&](const json &o, const std::string &at) -> std::string {
    if (!o.contains("precision"))
      return "";
    std::string format = string(o, "precision", file, at);
    if (!knownFormat(format))
      fail(file, join(at, "precision"),
           "unknown number format '" + format + "' (fp32, tf32, bf16, fp16, fp8)");
    return format;
  };
  const json &stages = array(j, "stages", file, "");
  std::vector<StageSpec> out;
  for (size_t i = 0; i < stages.size(); ++i) {
    const json &st = stages[i];
    std::string at = join("stages", i);
    StageSpec s;
    s.name = st.contains("name") ? string(st, "name", file, at) : "s" + std::to_string(i);
    if (st.contains("replica_groups")) {
      if (st.contains("group") || st.contains("replicas"))
        fail(file, at, "has both 'replica_groups' and 'group'/'replicas'; use one form");
      const json &list = array(st, "replica_groups", file, at);
      size_t withShare = 0;
      for (size_t k = 0; k < list.size(); ++k) {
        std::string gat = join(join(at, "replica_groups"), k);
        StageSpec::Replicas g;
        g.group = groupName(list[k], gat);
        g.replicas = integer(list[k], "replicas", file, gat, 1);
        g.precision = precisionOf(list[k], gat);
        g.field = gat;
        if (list[k].contains("experts"))
          g.experts = integer(list[k], "experts", file, gat, 1);
        if (list[k].contains("micro_batch_size")) {
          g.samples = integer(list[k], "micro_batch_size", file, gat, 1);
          ++withShare;
        }
        for (const StageSpec::Replicas &other : s.replicaGroups)
          if (other.group == g.group)
            fail(file, join(gat, "group"),
                 "lists group '" + g.group +
                     "' a second time in this stage; give it once with all its replicas");
        s.replicaGroups.push_back(g);
      }
      if (withShare != 0 && withShare != list.size())
        fail(file, join(at, "replica_groups"),
             "gives 'micro_batch_size' to some replica groups but not to others; give all "
             "or none (none: an even split)");
      s.explicitShares = withShare != 0;
    } else {
      // The original form: one group, an even share each (a planner's
      // micro_batch_size there is informational).
      StageSpec::Replicas g;
      g.group = groupName(st, at);
      g.replicas = integer(st, "replicas", file, at, 1);
      g.precision = precisionOf(st, at);
      g.field = at;
      if (st.contains("experts"))
        g.experts = integer(st, "experts", file, at, 1);
      s.replicaGroups.push_back(g);
    }
    if (st.contains("tensor_parallel"))
      s.tensorParallel = integer(st, "tensor_parallel", file, at, 1);
    const json &layers = field(st, "layers", file, at);
    if (!layers.is_array() || layers.size() != 2 || !layers[0].is_number_integer() ||
        !layers[1].is_number_integer() || layers[0].get<long>() < 0 ||
        layers[0].get<long>() >= layers[1].get<long>())
      fail(file, join(at, "layers"), "must be a non-empty range [begin, end)");
    s.layerBegin = layers[0].get<long>();
    s.layerEnd = layers[1].get<long>();
    if (st.contains("all_reduce"))
      s.allReduce = string(st, "all_reduce", file, at);
    if (st.contains("zero")) {
      const json &z = st["zero"];
      if (!z.is_number_integer() || z.get<long>() < 0 || z.get<long>() > 3)
        fail(file, join(at, "zero"),
             "must be 0 (unsharded), 1 (optimizer state sharded), 2 (and gradients) or 3 (and "
             "parameters), got " + z.dump());
      s.zero = z.get<long>();
    }
    if (st.contains("recompute")) {
      s.recompute = string(st, "recompute", file, at);
      if (!parseRecompute(s.recompute))
        fail(file, join(at, "recompute"),
             "must be none, selective or full, got '" + s.recompute + "'");
    }
    // Expert parallelism: every replica group says its experts, on
    // replicas that are whole devices holding all of their other state.
    size_t withExperts = 0;
    for (const StageSpec::Replicas &g : s.replicaGroups)
      withExperts += g.experts > 0;
    if (withExperts != 0 && withExperts != s.replicaGroups.size())
      fail(file, join(at, "replica_groups"),
           "gives 'experts' to some replica groups but not to others; with expert parallelism "
           "every replica holds a block of the experts");
    if (withExperts != 0 && s.tensorParallel > 1)
      fail(file, join(at, "tensor_parallel"),
           "splits replicas over devices while they hold blocks of the experts ('experts'); "
           "expert and tensor parallelism together are not supported yet");
    if (withExperts != 0 && s.zero > 0)
      fail(file, join(at, "zero"),
           "shards the training state while the replicas hold blocks of the experts "
           "('experts'); expert parallelism with ZeRO is not supported yet");
    out.push_back(s);
  }
  return out;
}

json planToJson(const Plan &plan, const Cluster &cluster,
                const ModelDesc &model) {
  json groups = json::array(), links = json::array(), stages = json::array();
  auto formatOf = [&](int g) -> std::string {
    return size_t(g) < plan.formats.size() ? plan.formats[g] : "";
  };
  // Each group lists the formats its kind has, so het-compile can refuse
  // a stage asked to train in one it lacks without the catalog.
  for (const auto &g : cluster.groups)
    groups.push_back({{"name", g.name},
                      {"kind", g.kind},
                      {"vendor", g.spec->vendor},
                      {"arch", g.spec->arch},
                      {"count", g.count()},
                      {"devices_per_node", g.devicesPerNode},
                      {"nodes", g.nodes},
                      {"memory_gib", g.spec->memoryGib},
                      {"formats", g.spec->formats()}});
  for (size_t a = 0; a < cluster.groups.size(); ++a)
    for (size_t b = a; b < cluster.groups.size(); ++b)
      links.push_back(
          {{"between", {cluster.groups[a].name, cluster.groups[b].name}},
           {"bandwidth_gbps", cluster.links[a][b].bandwidthGbps},
           {"latency_us", cluster.links[a][b].latencyUs}});
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StagePlan &s = plan.stages[j];
    json stage = {{"name", "s" + std::to_string(j)}};
    if (s.explicitShares() || s.expertParallel()) {
      json members = json::array();
      for (const ReplicaGroupPlan &g : s.replicaGroups) {
        json member = {{"group", cluster.groups[g.group].name}, {"replicas", g.replicas}};
        // (An even split with experts: no shares, as the first form.)
        if (s.explicitShares())
          member["micro_batch_size"] = g.samples;
        if (g.experts > 0)
          member["experts"] = g.experts;
        if (!formatOf(g.group).empty())
          member["precision"] = formatOf(g.group);
        members.push_back(member);
      }
      stage["replica_groups"] = members;
    } else {
      stage["group"] = cluster.groups[s.group()].name;
      stage["replicas"] = s.replicas();
      stage["micro_batch_size"] =
          CostModel::microBatchPerReplica(plan.globalBatch, plan.microBatches, s.replicas());
      if (!formatOf(s.group()).empty())
        stage["precision"] = formatOf(s.group());
    }
    stage["tensor_parallel"] = s.tensorParallel;
    stage["layers"] = {s.layerBegin, s.layerEnd};
    stage["all_reduce"] = toString(s.allReduce);
    if (s.recompute != Recompute::None)
      stage["recompute"] = toString(s.recompute);
    if (s.zero > 0)
      stage["zero"] = s.zero;
    stages.push_back(stage);
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
  std::vector<std::string> names;
  for (const auto &g : cluster.groups)
    names.push_back(g.name);
  std::vector<StageSpec> specs = readStageSpecs(j, file, names);
  for (size_t i = 0; i < specs.size(); ++i) {
    const StageSpec &spec = specs[i];
    std::string at = join("stages", i);
    StagePlan st;
    for (size_t k = 0; k < spec.replicaGroups.size(); ++k) {
      const StageSpec::Replicas &g = spec.replicaGroups[k];
      int index = int(std::find(names.begin(), names.end(), g.group) - names.begin());
      st.replicaGroups.push_back({index, int(g.replicas), int(g.samples), int(g.experts)});
      if (g.precision.empty())
        continue;
      // One group trains in one format, and only in one its kind has.
      std::string field = join(g.field, "precision");
      const DeviceGroup &group = cluster.groups[index];
      if (!group.spec->hasFormat(g.precision))
        fail(file, field,
             "stage " + spec.name + " trains group '" + g.group + "' (kind " + group.kind +
                 ") in " + g.precision + ", which the kind lacks (its catalog entry's "
                 "peak_tflops gives " + formatList(*group.spec) + ")");
      plan.formats.resize(cluster.groups.size());
      if (!plan.formats[index].empty() && plan.formats[index] != g.precision)
        fail(file, field,
             "stage " + spec.name + " trains group '" + g.group + "' in " + g.precision +
                 " but an earlier stage trains it in " + plan.formats[index] +
                 "; a group trains in one format");
      plan.formats[index] = g.precision;
    }
    st.tensorParallel = int(spec.tensorParallel);
    st.layerBegin = int(spec.layerBegin);
    st.layerEnd = int(spec.layerEnd);
    if (st.layerEnd > int(model.layers.size()))
      fail(file, join(at, "layers"),
           "must be a non-empty range inside [0, " +
               std::to_string(model.layers.size()) + ")");
    if (!parseAllReduceAlgorithm(spec.allReduce, st.allReduce))
      fail(file, join(at, "all_reduce"),
           "unknown algorithm '" + spec.allReduce + "' (ring, tree, hierarchical)");
    st.recompute = *parseRecompute(spec.recompute); // readStageSpecs checked it
    st.zero = int(spec.zero);
    if (!spec.explicitShares && st.mixed()) {
      // Groups without shares: even ones, as het-compile builds the file.
      std::vector<long> counts;
      for (const ReplicaGroupPlan &g : st.replicaGroups)
        counts.push_back(g.replicas);
      std::vector<ReplicaGroupPlan> even;
      for (const EvenShare &e : evenShares(counts, plan.globalBatch / plan.microBatches))
        even.push_back({st.replicaGroups[e.group].group, int(e.replicas), int(e.samples),
                        st.replicaGroups[e.group].experts});
      st.replicaGroups = even;
    }
    if (spec.explicitShares) {
      long total = 0;
      for (const auto &g : spec.replicaGroups)
        total += g.replicas * g.samples;
      long micro = plan.globalBatch / plan.microBatches;
      if (plan.globalBatch % plan.microBatches == 0 && total != micro)
        fail(file, join(at, "replica_groups"),
             "the shares add up to " + std::to_string(total) +
                 " samples, but a micro-batch has " + std::to_string(micro) +
                 " (global_batch / micro_batches)");
    }
    plan.stages.push_back(st);
  }
  return plan;
}

Plan loadPlan(const std::string &path, const Cluster &cluster, const ModelDesc &model) {
  return planFromJson(json_util::readFile(path), path, cluster, model);
}

} // namespace het::plan
