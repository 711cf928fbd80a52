//===- PartitionPlan.cpp --------------------------------------------------===//
#include "PartitionPlan.h"
#include "het/Plan/Error.h"

#include <fstream>
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
  const json &stages = need(j, "stages", path, "");
  if (!stages.is_array() || stages.empty())
    fail(path, "stages", "must be a non-empty list");
  for (size_t i = 0; i < stages.size(); ++i) {
    std::string at = "stages[" + std::to_string(i) + "]";
    StageInfo s;
    s.name = stages[i].contains("name") ? str(stages[i], "name", path, at)
                                        : "s" + std::to_string(i);
    s.group = str(stages[i], "group", path, at);
    s.replicas = count(stages[i], "replicas", path, at, 1);
    const json &layers = need(stages[i], "layers", path, at);
    if (!layers.is_array() || layers.size() != 2 ||
        !layers[0].is_number_integer() || !layers[1].is_number_integer() ||
        layers[0].get<long>() < 0 ||
        layers[0].get<long>() >= layers[1].get<long>())
      fail(path, at + ".layers", "must be a non-empty range [begin, end)");
    s.layerBegin = layers[0];
    s.layerEnd = layers[1];
    if (stages[i].contains("all_reduce"))
      s.allReduce = str(stages[i], "all_reduce", path, at);
    bool known = false;
    for (const auto &g : p.groups)
      known |= g.name == s.group;
    if (!known)
      fail(path, at + ".group",
           "names group '" + s.group +
               "', which the plan's groups do not list");
    p.stages.push_back(s);
  }
  return p;
}

PartitionPlan fromPlan(const het::plan::Plan &plan,
                       const het::plan::Cluster &cluster) {
  PartitionPlan p;
  p.cluster = cluster.name;
  for (const auto &g : cluster.groups)
    p.groups.push_back({g.name, g.spec->vendor, g.spec->arch, g.count(),
                        g.nodes, g.spec->memoryGib});
  for (size_t a = 0; a < cluster.groups.size(); ++a)
    for (size_t b = a; b < cluster.groups.size(); ++b)
      p.links.push_back({cluster.groups[a].name, cluster.groups[b].name,
                         cluster.links[a][b].bandwidthGbps,
                         cluster.links[a][b].latencyUs});
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const auto &s = plan.stages[j];
    p.stages.push_back({"s" + std::to_string(j), cluster.groups[s.group].name,
                        s.replicas, s.layerBegin, s.layerEnd,
                        het::plan::toString(s.allReduce)});
  }
  return p;
}

} // namespace het::partition
