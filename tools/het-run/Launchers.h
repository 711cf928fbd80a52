//===- Launchers.h - multi-machine runs through existing launchers -*- C++ -*-===//
//
// het-run is not a cluster manager. For more than one machine it prints the
// mpirun and srun command lines that start the same ranks with the same
// environment bootstrap, and writes a Kubernetes Volcano Job manifest.
//
#ifndef HET_RUN_LAUNCHERS_H
#define HET_RUN_LAUNCHERS_H

#include "het/Plan/ClusterSpec.h"

#include <string>
#include <vector>

namespace hetrun {

struct LaunchSpec {
  std::string jobName = "het-job";
  std::string image = "het:latest";
  int nranks = 0;
  int port = 29500;
  int maxRestarts = 0;
  long long collectiveTimeoutMs = 0;
  int metricsPort = 9400;        // each pod's het-run serves metrics here
  std::string priorityClass;     // "": the cluster's default
  std::vector<std::string> argv;
  const het::plan::Cluster *cluster = nullptr; // may be null for mpirun/srun
  /// --elastic: a coordinator pod (het-run --elastic --coordinate, the
  /// cluster spec at clusterFile in the image) and a het-run --join agent
  /// per node, restarted in place when it fails, instead of one job of
  /// fixed ranks that restarts whole.
  bool elastic = false;
  std::string clusterFile;
  double lossGraceS = 0;
  int coordinatorPort = 29400;
};

/// Quotes a word for a POSIX shell.
std::string shellQuote(const std::string &word);
/// The mpirun and srun lines (with a comment line before each).
std::string launcherLines(const LaunchSpec &spec);
/// The Kubernetes device-plugin resource of a device vendor
/// ("nvidia" -> "nvidia.com/gpu"); "" for CPUs.
std::string devicePluginResource(const std::string &vendor);
/// A Volcano Job (batch.volcano.sh/v1alpha1), as YAML: one task per device
/// group of the cluster, one pod per node of that group.
/// Its name: a DNS label (pods are named <job>-<task>-<index>).
std::string taskName(const std::string &group);
std::string volcanoJobYaml(const LaunchSpec &spec);

} // namespace hetrun

#endif
