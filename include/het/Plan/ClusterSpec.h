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
  /// "node_labels": labels the nodes of this group carry (device plugins'
  /// and feature discovery's, e.g. nvidia.com/gpu.product); het-run
  /// --emit-k8s requires them in the pods' node affinity.
  std::map<std::string, std::string> nodeLabels;
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

  const Link &link(int a, int b) const { return links[a][b]; }
  /// The same cluster restricted to the groups in `keep` (by index).
  Cluster subset(const std::vector<int> &keep) const;
  int deviceCount() const;
};

/// Parses and validates a cluster spec; errors name the file and the field.
Cluster loadCluster(const std::string &path, const DeviceCatalog &catalog);
Cluster parseCluster(const nlohmann::json &spec, const std::string &file,
                     const DeviceCatalog &catalog);

} // namespace het::plan

#endif
