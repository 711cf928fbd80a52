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
  for (json node : spec.at("nodes")) {
    int copies = node.value("count", 1);
    // How many devices each group loses on one node of this entry.
    json reduced = node;
    reduced["count"] = 1;
    bool touched = false;
    for (json &device : reduced["devices"]) {
      std::string group = device.at("group").get<std::string>();
      int &still = left[group];
      int take = std::min(still, device.at("count").get<int>());
      if (take > 0) {
        device["count"] = device.at("count").get<int>() - take;
        still -= take;
        touched = true;
      }
    }
    if (!touched) {
      nodes.push_back(node);
      continue;
    }
    if (copies > 1) {
      // The other copies stay as they were; the one that lost devices is a
      // node template of its own, and a group lives on one template, so its
      // groups are renamed (their links with them).
      json rest = node;
      rest["count"] = copies - 1;
      nodes.push_back(rest);
      if (reduced.contains("name"))
        reduced["name"] = reduced["name"].get<std::string>() + "-degraded";
      std::map<std::string, std::string> renamed;
      for (json &device : reduced["devices"]) {
        std::string group = device.at("group").get<std::string>(), name = group + "-degraded";
        for (int k = 2; names.count(name); ++k)
          name = group + "-degraded-" + std::to_string(k);
        names.insert(name);
        renamed[group] = name;
        device["group"] = name;
      }
      if (reduced.contains("links"))
        for (json &link : reduced["links"])
          for (json &end : link["between"])
            if (renamed.count(end.get<std::string>()))
              end = renamed[end.get<std::string>()];
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
    nodes.push_back(reduced);
  }
  for (const auto &[group, count] : left)
    if (count > 0)
      throw std::runtime_error("cannot take " + std::to_string(lost.at(group)) +
                               " devices out of group '" + group + "': it has only " +
                               std::to_string(lost.at(group) - count));
  out["nodes"] = nodes;
  return out;
}

} // namespace het::plan
