//===- ClusterSurvivors.h - a cluster spec without its lost devices -*- C++ -*-===//
//
// When devices of a running job are lost for good, het-run --elastic plans
// again for what is left: the same cluster spec with those devices taken
// out (a device entry's count lowered, entries and links of groups left
// with none removed), written as a spec the planner reads like any other.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_CLUSTERSURVIVORS_H
#define HET_PLAN_CLUSTERSURVIVORS_H

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace het::plan {

struct Cluster;

/// The group of each rank when het-run --cluster starts one rank per device,
/// group by group in file order.
std::vector<std::string> rankGroups(const Cluster &cluster);

/// `spec` (a cluster spec's JSON) with `lost[group]` devices of each group
/// taken out. A node entry standing for several identical nodes ("count")
/// is split so that only one node loses devices; that node's groups are
/// renamed "<group>-degraded" (a group lives on one node template). Throws std::runtime_error
/// naming the group when it has fewer devices than that.
nlohmann::json withoutDevices(const nlohmann::json &spec, const std::map<std::string, int> &lost);

/// The group of `spec` that `group` of withoutDevices(spec, ...) stands
/// for: `group` itself, or the group a "-degraded" name was made from.
/// Throws std::runtime_error when it is neither.
std::string originalGroup(const nlohmann::json &spec, const std::string &group);

} // namespace het::plan

#endif
