//===- ClusterSpec.h - the devices of a job and their links -----*- C++ -*-===//
#ifndef HET_PLAN_CLUSTERSPEC_H
#define HET_PLAN_CLUSTERSPEC_H

#include "het/Plan/DeviceCatalog.h"

#include <nlohmann/json_fwd.hpp>
#include <map>
#include <string>
#include <vector>

namespace het::plan {

/// Bandwidth in Gbit/s (as in cluster specs and the IR), latency in us.
struct Link {
  std::string type;
  double bandwidthGbps = 0, latencyUs = 0;
  double bytesPerSecond() const { return bandwidthGbps * 1e9 / 8; }
  double latencySeconds() const { return latencyUs * 1e-6; }
};

/// Identical devices of one kind, `devicesPerNode` on each of `nodes` nodes.
struct DeviceGroup {
  std::string name, kind;
  const DeviceSpec *spec = nullptr;
  int devicesPerNode = 0, nodes = 0;
  int nodeTemplate = -1; // index into the spec's "nodes"
  /// What one node's network connection carries, Gbit/s: the template's
  /// `nic_gbps`, else the network's bandwidth. Every flow leaving the node
  /// shares it.
  double nicGbps = 0;
  std::string zone; // the template's `zone` (rack, pod, site); "" if none
  /// "node_labels": labels the nodes of this group carry (device plugins'
  /// and feature discovery's, e.g. nvidia.com/gpu.product); het-run
  /// --emit-k8s requires them in the pods' node affinity.
  std::map<std::string, std::string> nodeLabels;
  /// What one device costs per hour (USD): the entry's `price_per_hour`,
  /// else the catalog's price on the entry's `market` ("on_demand", the
  /// default, or "spot"); 0 when unknown.
  double pricePerHour = 0;
  bool spot = false; // rented on the spot market: may be preempted
  int count() const { return devicesPerNode * nodes; }
};

struct Cluster {
  std::string name, file;
  std::vector<DeviceGroup> groups;
  bool hasNetwork = false;
  Link network;
  /// links[a][b]: the route between a device of group a and one of group b
  /// (b == a: inside the group, on one node). Filled by validation.
  std::vector<std::vector<Link>> links;

  /// crossNode[a][b]: the network route from a node of group a to another
  /// node of group b (b == a: two nodes of one group): the slower of the
  /// two nodes' NICs and the fabric between their zones (a `network.zones`
  /// entry, else the network divided by its `oversubscription` when the
  /// zones differ). Filled only when the spec has a network.
  std::vector<std::vector<Link>> crossNode;
  /// Whether links[a][b] is a route over the network (no link on a shared
  /// node): flows to or from one node then share its NIC.
  std::vector<std::vector<bool>> overNetwork;

  const Link &link(int a, int b) const { return links[a][b]; }
  /// The link between a device of `a` and one of `b` on different nodes
  /// where they can be (b == a and the group spans nodes), else links[a][b].
  const Link &farthest(int a, int b) const {
    return crossesNodes(a, b) ? crossNode[a][b] : links[a][b];
  }
  bool crossesNodes(int a, int b) const {
    return overNetwork[a][b] || (a == b && groups[a].nodes > 1 && hasNetwork);
  }
  /// The same cluster restricted to the groups in `keep` (by index).
  Cluster subset(const std::vector<int> &keep) const;
  int deviceCount() const;
  /// The catalog names of the kinds its groups use, once each.
  std::vector<std::string> kindNames() const;
};

/// Parses and validates a cluster spec; errors name the file and the field.
Cluster loadCluster(const std::string &path, const DeviceCatalog &catalog);
Cluster parseCluster(const nlohmann::json &spec, const std::string &file,
                     const DeviceCatalog &catalog);

} // namespace het::plan

#endif
