//===- ClusterSurvivors.cpp - a cluster spec without its lost devices -----===//
#include "het/Plan/ClusterSurvivors.h"
#include "het/Plan/ClusterSpec.h"

#include <set>
#include <stdexcept>

namespace het::plan {

using json = nlohmann::json;

std::vector<std::string> rankGroups(const Cluster &cluster) {
  std::vector<std::string> groups;
  for (const DeviceGroup &g : cluster.groups)
    groups.insert(groups.end(), g.count(), g.name);
  return groups;
}

json withoutDevices(const json &spec, const std::map<std::string, int> &lost) {
  json out = spec;
  std::map<std::string, int> left = lost;
  std::set<std::string> names; // every group's, to keep new ones unique
  for (const json &node : spec.at("nodes"))
    for (const json &device : node.at("devices"))
      names.insert(device.at("group").get<std::string>());
  json nodes = json::array();
  // A node that lost devices becomes a template of its own; a group lives
  // on one template, so its groups get new names (their links with them)
  // unless it is the only node left of its template.
  auto rename = [&](json &node) {
    if (node.contains("name"))
      node["name"] = node["name"].get<std::string>() + "-degraded";
    std::map<std::string, std::string> renamed;
    for (json &device : node["devices"]) {
      std::string group = device.at("group").get<std::string>(), name = group + "-degraded";
      for (int k = 2; names.count(name); ++k)
        name = group + "-degraded-" + std::to_string(k);
      names.insert(name);
      renamed[group] = name;
      device["group"] = name;
    }
    if (node.contains("links"))
      for (json &link : node["links"])
        for (json &end : link["between"])
          if (renamed.count(end.get<std::string>()))
            end = renamed[end.get<std::string>()];
  };
  for (const json &node : spec.at("nodes")) {
    int copies = node.value("count", 1);
    std::vector<json> degraded;
    auto losesHere = [&] {
      for (const json &device : node.at("devices"))
        if (left[device.at("group").get<std::string>()] > 0)
          return true;
      return false;
    };
    // One node of this template at a time, as many as the losses need.
    while (copies > 0 && losesHere()) {
      --copies;
      json reduced = node;
      reduced["count"] = 1;
      for (json &device : reduced["devices"]) {
        int &still = left[device.at("group").get<std::string>()];
        int take = std::min(still, device.at("count").get<int>());
        device["count"] = device.at("count").get<int>() - take;
        still -= take;
      }
      json devices = json::array();
      for (const json &device : reduced["devices"])
        if (device.at("count").get<int>() > 0)
          devices.push_back(device);
      if (devices.empty())
        continue; // the whole node is gone
      reduced["devices"] = devices;
      std::set<std::string> present;
      for (const json &device : devices)
        present.insert(device.at("group").get<std::string>());
      if (reduced.contains("links")) {
        json links = json::array();
        for (const json &link : reduced["links"]) {
          bool keep = true;
          for (const json &end : link.at("between"))
            keep = keep && present.count(end.get<std::string>());
          if (keep)
            links.push_back(link);
        }
        reduced["links"] = links;
      }
      degraded.push_back(reduced);
    }
    if (copies > 0) {
      json rest = node;
      rest["count"] = copies;
      nodes.push_back(rest);
    }
    for (size_t i = 0; i < degraded.size(); ++i) {
      if (copies > 0 || i > 0)
        rename(degraded[i]);
      nodes.push_back(degraded[i]);
    }
  }
  for (const auto &[group, count] : left)
    if (count > 0)
      throw std::runtime_error("cannot take " + std::to_string(lost.at(group)) +
                               " devices out of group '" + group + "': it has only " +
                               std::to_string(lost.at(group) - count));
  out["nodes"] = nodes;
  return out;
}

std::string originalGroup(const json &spec, const std::string &group) {
  std::set<std::string> names;
  for (const json &node : spec.at("nodes"))
    for (const json &device : node.at("devices"))
      names.insert(device.at("group").get<std::string>());
  if (names.count(group))
    return group;
  // withoutDevices names a degraded copy "<group>-degraded[-k]".
  size_t at = group.rfind("-degraded");
  if (at != std::string::npos) {
    std::string rest = group.substr(at + 9);
    bool numbered = rest.size() > 1 && rest[0] == '-' &&
                    rest.find_first_not_of("0123456789", 1) == std::string::npos;
    if ((rest.empty() || numbered) && names.count(group.substr(0, at)))
      return group.substr(0, at);
  }
  throw std::runtime_error("group '" + group + "' is not in the cluster spec and not a degraded "
                           "copy of one of its groups");
}

} // namespace het::plan
