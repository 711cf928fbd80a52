//===- PartitionPlan.cpp --------------------------------------------------===//
#include "het/Partition/PartitionPlan.h"
#include "het/Plan/Error.h"
#include "het/Plan/NumberFormats.h"

#include <algorithm>

#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

namespace het::partition {
using het::plan::fail;
using nlohmann::json;

namespace {
// Typed access that names the field; kept local (lib/Plan's helpers are
// private to that library).
const json &need(const json &o, const std::string &key, const std::string &file,
                 const std::string &at) {
  if (!o.is_object() || !o.contains(key))
    fail(file, at.empty() ? key : at + "." + key, "missing");
  return o[key];
}
std::string str(const json &o, const std::string &key, const std::string &file,
                const std::string &at) {
  const json &v = need(o, key, file, at);
  if (!v.is_string() || v.get<std::string>().empty())
    fail(file, at + "." + key, "must be a non-empty string");
  return v;
}
long count(const json &o, const std::string &key, const std::string &file,
           const std::string &at, long minimum) {
  const json &v = need(o, key, file, at);
  if (!v.is_number_integer() || v.get<long>() < minimum)
    fail(file, at + "." + key,
         "must be an integer >= " + std::to_string(minimum) + ", not " +
             v.dump());
  return v;
}
double number(const json &o, const std::string &key, const std::string &file,
              const std::string &at) {
  const json &v = need(o, key, file, at);
  if (!v.is_number() || v.get<double>() < 0)
    fail(file, at + "." + key, "must be a number >= 0, not " + v.dump());
  return v;
}
} // namespace

const GroupInfo *PartitionPlan::group(const std::string &name) const {
  for (const GroupInfo &g : groups)
    if (g.name == name)
      return &g;
  return nullptr;
}

PartitionPlan readPartitionPlan(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail(path, "", "cannot open the plan file");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error &e) {
    fail(path, "", std::string("not valid JSON: ") + e.what());
  }
  PartitionPlan p;
  p.file = path;
  p.cluster = str(j, "cluster", path, "");
  const json &groups = need(j, "groups", path, "");
  if (!groups.is_array() || groups.empty())
    fail(path, "groups", "must be a non-empty list");
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string at = "groups[" + std::to_string(i) + "]";
    GroupInfo g;
    g.name = str(groups[i], "name", path, at);
    g.vendor = str(groups[i], "vendor", path, at);
    g.arch = str(groups[i], "arch", path, at);
    g.count = count(groups[i], "count", path, at, 1);
    g.nodes = groups[i].contains("nodes")
                  ? count(groups[i], "nodes", path, at, 1)
                  : 1;
    g.memoryGib = number(groups[i], "memory_gib", path, at);
    if (groups[i].contains("kind"))
      g.kind = str(groups[i], "kind", path, at);
    if (groups[i].contains("formats")) {
      const json &formats = groups[i]["formats"];
      if (!formats.is_array())
        fail(path, at + ".formats", "must be a list of number formats");
      for (const json &f : formats) {
        if (!f.is_string() || !het::plan::knownFormat(f.get<std::string>()))
          fail(path, at + ".formats",
               "lists " + f.dump() + ", not a number format (fp32, tf32, bf16, fp16, fp8)");
        g.formats.push_back(f.get<std::string>());
      }
    }
    p.groups.push_back(g);
  }
  if (j.contains("links")) {
    const json &links = j["links"];
    if (!links.is_array())
      fail(path, "links", "must be a list");
    for (size_t i = 0; i < links.size(); ++i) {
      std::string at = "links[" + std::to_string(i) + "]";
      const json &between = need(links[i], "between", path, at);
      if (!between.is_array() || between.size() != 2 ||
          !between[0].is_string() || !between[1].is_string())
        fail(path, at + ".between", "must be two group names");
      p.links.push_back({between[0], between[1],
                         number(links[i], "bandwidth_gbps", path, at),
                         number(links[i], "latency_us", path, at)});
    }
  }
  if (j.contains("global_batch"))
    p.globalBatch = count(j, "global_batch", path, "", 1);
  if (j.contains("micro_batches"))
    p.microBatches = count(j, "micro_batches", path, "", 1);
  std::vector<std::string> names;
  for (const GroupInfo &g : p.groups)
    names.push_back(g.name);
  p.stages = het::plan::readStageSpecs(j, path, names);
  // A stage trains in a format its kind has: refused here, at compile
  // time, with the stage and kind named, never found by the ranks.
  for (const StageInfo &stage : p.stages)
    for (const ReplicaGroupInfo &r : stage.replicaGroups) {
      const GroupInfo *g = p.group(r.group);
      if (r.precision.empty() || g->formats.empty() ||
          std::find(g->formats.begin(), g->formats.end(), r.precision) != g->formats.end())
        continue;
      std::string has;
      for (const std::string &f : g->formats)
        has += (has.empty() ? "" : ", ") + f;
      fail(path, r.field + ".precision",
           "stage " + stage.name + " trains group '" + g->name + "' (kind " +
               (g->kind.empty() ? g->vendor + "/" + g->arch : g->kind) + ") in " + r.precision +
               ", which the kind lacks (it has " + has + ")");
    }
  return p;
}

PartitionPlan fromPlan(const het::plan::Plan &plan,
                       const het::plan::Cluster &cluster) {
  PartitionPlan p;
  p.file = "(the planner's plan)";
  p.cluster = cluster.name;
  p.globalBatch = plan.globalBatch;
  p.microBatches = plan.microBatches;
  for (const auto &g : cluster.groups)
    p.groups.push_back({g.name, g.spec->vendor, g.spec->arch, g.count(), g.nodes,
                        g.spec->memoryGib, g.kind, g.spec->formats()});
  for (size_t a = 0; a < cluster.groups.size(); ++a)
    for (size_t b = a; b < cluster.groups.size(); ++b)
      p.links.push_back({cluster.groups[a].name, cluster.groups[b].name,
                         cluster.links[a][b].bandwidthGbps,
                         cluster.links[a][b].latencyUs});
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const auto &s = plan.stages[j];
    StageInfo st;
    st.name = "s" + std::to_string(j);
    for (const auto &m : s.replicaGroups) {
      ReplicaGroupInfo r;
      r.group = cluster.groups[m.group].name;
      r.replicas = m.replicas;
      r.samples = m.samples;
      if (size_t(m.group) < plan.formats.size())
        r.precision = plan.formats[m.group];
      r.field = "stages[" + std::to_string(j) + "]";
      st.replicaGroups.push_back(r);
    }
    st.explicitShares = s.explicitShares();
    st.tensorParallel = s.tensorParallel;
    st.layerBegin = s.layerBegin;
    st.layerEnd = s.layerEnd;
    st.allReduce = het::plan::toString(s.allReduce);
    st.recompute = het::plan::toString(s.recompute);
    st.zero = s.zero;
    p.stages.push_back(st);
  }
  return p;
}

void resolveShares(PartitionPlan &plan, long microBatchSamples) {
  const std::string &file = plan.file;
  std::map<std::string, long> used;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    StageInfo &s = plan.stages[i];
    std::string at = "stages[" + std::to_string(i) + "] ('" + s.name + "')";
    long replicas = s.replicas();
    if (!s.explicitShares) {
      if (replicas > microBatchSamples)
        fail(file, at + ".replicas",
             std::to_string(replicas) + " replicas cannot share a micro-batch of " +
                 std::to_string(microBatchSamples) + " samples (each needs at least one)");
      // Even shares (the first replicas take one sample more where the
      // micro-batch does not divide).
      std::vector<long> counts;
      for (const ReplicaGroupInfo &g : s.replicaGroups)
        counts.push_back(g.replicas);
      std::vector<ReplicaGroupInfo> even;
      for (const ::het::plan::EvenShare &e : ::het::plan::evenShares(counts, microBatchSamples)) {
        const ReplicaGroupInfo &g = s.replicaGroups[e.group];
        ReplicaGroupInfo part = g;
        part.replicas = e.replicas;
        part.samples = e.samples;
        even.push_back(part);
      }
      s.replicaGroups = even;
    } else {
      long total = 0;
      std::string shares;
      for (const ReplicaGroupInfo &g : s.replicaGroups) {
        total += g.replicas * g.samples;
        shares += (shares.empty() ? "" : " + ") + std::to_string(g.replicas) + " x " +
                  std::to_string(g.samples);
      }
      if (total != microBatchSamples)
        fail(file, at + ".replica_groups",
             "the shares add up to " + shares + " = " + std::to_string(total) +
                 " samples, but a micro-batch has " + std::to_string(microBatchSamples) +
                 " (global_batch / micro_batches)");
    }
    // Expert parallelism: each replica holds its own experts, so each is
    // a replica group of its own (one compiled variant per replica).
    if (s.expertParallel()) {
      std::vector<ReplicaGroupInfo> single;
      for (const ReplicaGroupInfo &g : s.replicaGroups)
        for (long r = 0; r < g.replicas; ++r) {
          ReplicaGroupInfo one = g;
          one.replicas = 1;
          single.push_back(one);
        }
      s.replicaGroups = single;
    }
    for (size_t k = 0; k < s.replicaGroups.size(); ++k) {
      const ReplicaGroupInfo &g = s.replicaGroups[k];
      const GroupInfo *group = plan.group(g.group);
      if (s.tensorParallel > 1 && group->devicesPerNode() % s.tensorParallel != 0)
        fail(file, at + ".tensor_parallel",
             "splits each replica over " + std::to_string(s.tensorParallel) +
                 " devices, which does not divide the " +
                 std::to_string(group->devicesPerNode()) + " devices per node of group '" +
                 g.group + "' (tensor parallelism stays inside a node)");
      used[g.group] += g.replicas * s.tensorParallel;
    }
  }
  // The stage that takes a group past its devices names the problem.
  std::map<std::string, long> sofar;
  for (size_t i = 0; i < plan.stages.size(); ++i)
    for (const ReplicaGroupInfo &g : plan.stages[i].replicaGroups) {
      const GroupInfo *group = plan.group(g.group);
      sofar[g.group] += g.replicas * plan.stages[i].tensorParallel;
      if (sofar[g.group] > group->count)
        fail(file, "stages[" + std::to_string(i) + "] ('" + plan.stages[i].name + "').replicas",
             "with the stages before it, the plan uses " + std::to_string(used[g.group]) +
                 " devices of group '" + g.group + "' (replicas x tensor_parallel), which has " +
                 std::to_string(group->count));
    }
}

std::vector<long> distinctShares(const PartitionPlan &plan) {
  std::set<long> shares;
  for (const StageInfo &s : plan.stages)
    for (const ReplicaGroupInfo &g : s.replicaGroups)
      shares.insert(g.samples);
  return {shares.begin(), shares.end()};
}

} // namespace het::partition
