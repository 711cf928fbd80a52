//===- Launchers.cpp - mpirun / srun lines and a Volcano Job --------------===//
#include "Launchers.h"
#include "het/Plan/DeviceCatalog.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <sstream>

namespace hetrun {

using json = nlohmann::ordered_json;

std::string shellQuote(const std::string &w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,@%+") == std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {
// In a pod, the metrics server listens on the pod's addresses so that
// Prometheus can scrape /metrics (het-run's default is loopback); its
// state-changing endpoints need the job token (the Secret) either way.
constexpr const char *kPodMetricsAddress = " --metrics-address 0.0.0.0";

std::string program(const LaunchSpec &s) {
  std::string p;
  for (const std::string &a : s.argv) p += (p.empty() ? "" : " ") + shellQuote(a);
  return p;
}

std::string timeoutEnv(const LaunchSpec &s) {
  return s.collectiveTimeoutMs > 0 ? " HETCCL_TIMEOUT_MS=" + std::to_string(s.collectiveTimeoutMs)
                                   : "";
}

// A tiny YAML writer for the JSON we build: block style, strings quoted
// with JSON escapes (valid YAML double-quoted scalars).
void yaml(std::ostream &os, const json &v, int indent, bool inSeq) {
  std::string pad(size_t(indent), ' ');
  if (v.is_object()) {
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!(first && inSeq)) os << pad;
      first = false;
      os << it.key() << ":";
      const json &c = it.value();
      if ((c.is_object() || c.is_array()) && !c.empty()) {
        os << "\n";
        yaml(os, c, indent + 2, false);
      } else {
        os << " " << (c.is_object() ? "{}" : c.is_array() ? "[]" : c.dump()) << "\n";
      }
    }
  } else if (v.is_array()) {
    for (const json &c : v) {
      os << pad << "- ";
      if (c.is_object() && !c.empty()) yaml(os, c, indent + 2, true);
      else os << c.dump() << "\n";
    }
  } else {
    os << pad << v.dump() << "\n";
  }
}
} // namespace

std::string devicePluginResource(const std::string &vendor) {
  if (vendor == "nvidia") return "nvidia.com/gpu";
  if (vendor == "amd") return "amd.com/gpu";
  if (vendor == "ascend") return "huawei.com/Ascend910";
  if (vendor == "iluvatar") return "iluvatar.ai/gpu";
  if (vendor == "metax") return "metax-tech.com/gpu";
  if (vendor == "moore_threads") return "mthreads.com/gpu";
  return "";
}

std::string launcherLines(const LaunchSpec &s) {
  std::ostringstream os;
  std::string prog = program(s);
  os << "# Open MPI (hetccl reads OMPI_COMM_WORLD_RANK/SIZE); ROOT_HOST = the host of rank 0,\n"
        "# and set HETCCL_BIND_ADDR on each host to an address the others can reach:\n";
  os << "export HETCCL_TOKEN=$(openssl rand -hex 32)\n";
  os << "mpirun -np " << s.nranks << " -x HETCCL_ROOT=$ROOT_HOST:" << s.port
     << " -x HETCCL_TOKEN" << (s.collectiveTimeoutMs > 0 ? " -x" + timeoutEnv(s) : "") << " " << prog
     << "\n";
  os << "# Slurm (inside an allocation):\n";
  os << "export HETCCL_TOKEN=$(openssl rand -hex 32) HETCCL_ROOT=$(scontrol show hostnames "
        "\"$SLURM_JOB_NODELIST\" | head -n1):"
     << s.port << timeoutEnv(s) << "\n";
  os << "srun --ntasks=" << s.nranks
     << " --kill-on-bad-exit=1 bash -c 'RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS "
        "LOCAL_RANK=$SLURM_LOCALID exec \"$@\"' het-rank "
     << prog << "\n";
  return os.str();
}

std::string taskName(const std::string &group) {
  std::string name;
  for (char c : group)
    name += std::isalnum(static_cast<unsigned char>(c))
                ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                : '-';
  name = name.substr(0, 63);
  while (!name.empty() && name.back() == '-')
    name.pop_back();
  while (!name.empty() && name.front() == '-')
    name.erase(name.begin());
  return name.empty() ? "devices" : name;
}

std::string volcanoJobYaml(const LaunchSpec &s) {
  const het::plan::Cluster &c = *s.cluster;
  int world = c.deviceCount();
  int pods = 0;
  for (const auto &g : c.groups) pods += g.nodes;
  // Task names: the groups' as DNS labels, made unique ("a_b" and "a-b"
  // would both be "a-b"), short enough for the pods' host names.
  std::vector<std::string> names;
  auto taken = [&](const std::string &name) {
    return std::find(names.begin(), names.end(), name) != names.end() ||
           (s.elastic && name == "coordinator");
  };
  if (s.elastic && (s.jobName + "-coordinator-0").size() > 63)
    throw std::runtime_error("the coordinator's pod would be named '" + s.jobName +
                             "-coordinator-0', longer than the 63 characters of a host name: use "
                             "a shorter --job-name");
  for (const auto &g : c.groups) {
    std::string base = taskName(g.name), name = base;
    for (int k = 2; taken(name); ++k)
      name = base.substr(0, 60) + "-" + std::to_string(k);
    std::string host = s.jobName + "-" + name + "-" + std::to_string(std::max(0, g.nodes - 1));
    if (host.size() > 63)
      throw std::runtime_error("the pods of group '" + g.name + "' would be named like '" + host +
                               "', longer than the 63 characters of a host name: use a "
                               "shorter --job-name");
    names.push_back(name);
  }
  std::string first = names.empty() ? "" : names.front();
  // Volcano's svc plugin gives pod i of task t the name <job>-<t>-<i>.<job>.
  std::string rootHost = s.jobName + "-" + first + "-0." + s.jobName;

  // Every pod: the job token from its Secret, and the annotations by which
  // Prometheus finds the pod's het-run metrics.
  const json tokenEnv = {{"name", "HETCCL_TOKEN"},
                         {"valueFrom",
                          {{"secretKeyRef", {{"name", s.jobName + "-token"}, {"key", "token"}}}}}};
  auto podMetadata = [&](const std::string &task) {
    return json{{"labels", {{"het.dev/group", task}}},
                {"annotations", {{"prometheus.io/scrape", "true"},
                                 {"prometheus.io/port", std::to_string(s.metricsPort)},
                                 {"prometheus.io/path", "/metrics"}}}};
  };
  json tasks = json::array();
  std::string failAction = s.maxRestarts > 0 ? "RestartJob" : "TerminateJob";
  // Elastic: the coordinator plans and decides; its failure restarts the
  // job (from checkpoints), an agent's does not (its pod restarts and joins
  // again). It needs no device, only the cluster spec, the program, the
  // model and het-compile (the image's).
  std::string coordinator = s.jobName + "-coordinator-0." + s.jobName + ":" +
                            std::to_string(s.coordinatorPort);
  if (s.elastic) {
    char grace[32];
    std::snprintf(grace, sizeof grace, "%g", s.lossGraceS);
    std::string cmd = "exec het-run --cluster " + shellQuote(s.clusterFile) +
                      " --elastic --coordinate 0.0.0.0:" + std::to_string(s.coordinatorPort) +
                      (s.lossGraceS > 0 ? std::string(" --loss-grace-s ") + grace : "") +
                      (s.maxRestarts > 0 ? " --max-restarts " + std::to_string(s.maxRestarts) : "") +
                      (s.collectiveTimeoutMs > 0
                           ? " --timeout-ms " + std::to_string(s.collectiveTimeoutMs)
                           : "") +
                      " --metrics-port " + std::to_string(s.metricsPort) + kPodMetricsAddress +
                      " -- " + program(s);
    json container = {
        {"name", "coordinator"},
        {"image", s.image},
        {"command", json::array({"/bin/sh", "-c", cmd})},
        {"env", json::array({tokenEnv})},
        {"ports", json::array({json{{"containerPort", s.coordinatorPort}, {"name", "agents"}},
                               json{{"containerPort", s.metricsPort}, {"name", "metrics"}}})},
        {"resources", {{"limits", {{"cpu", "2"}}}}}};
    json metadata = podMetadata("coordinator");
    tasks.push_back(
        {{"name", "coordinator"},
         {"replicas", 1},
         // The job is over when the coordinator is (its agents then quit).
         {"policies", json::array({json{{"event", "PodFailed"}, {"action", failAction}},
                                   json{{"event", "PodEvicted"}, {"action", failAction}},
                                   json{{"event", "TaskCompleted"}, {"action", "CompleteJob"}}})},
         {"template",
          {{"metadata", metadata},
           {"spec", {{"restartPolicy", "Never"}, {"containers", json::array({container})}}}}}});
  }
  int rankBase = 0;
  for (const auto &g : c.groups) {
    std::string resource = devicePluginResource(g.spec ? g.spec->vendor : "");
    json limits = json::object();
    if (!resource.empty()) limits[resource] = g.devicesPerNode;
    else limits["cpu"] = std::to_string(g.devicesPerNode);
    // Each pod runs het-run for its node's ranks; the first global rank of
    // pod i of this task is rankBase + i * devicesPerNode.
    std::string cmd = s.elastic
                          ? "exec het-run --join " + coordinator + " --group " + shellQuote(g.name) +
                                " --metrics-port " + std::to_string(s.metricsPort) + kPodMetricsAddress
                          : "exec het-run -n " + std::to_string(g.devicesPerNode) + " --world-size " +
                      std::to_string(world) + " --rank-offset $((" + std::to_string(rankBase) +
                      " + VC_TASK_INDEX * " + std::to_string(g.devicesPerNode) + ")) --root " +
                      rootHost + ":" + std::to_string(s.port) +
                      (s.collectiveTimeoutMs > 0
                           ? " --timeout-ms " + std::to_string(s.collectiveTimeoutMs)
                           : "") +
                      " --metrics-port " + std::to_string(s.metricsPort) + kPodMetricsAddress +
                      " -- " + program(s);
    json container = {
        {"name", "rank"},
        {"image", s.image},
        {"command", json::array({"/bin/sh", "-c", cmd})},
        {"env", json::array({json{{"name", "HET_DEVICE_GROUP"}, {"value", g.name}},
                             json{{"name", "HET_DEVICE_KIND"}, {"value", g.kind}},
                             // Data sockets on the pod's address; ranks of one pod share a host.
                             json{{"name", "HETCCL_BIND_ADDR"},
                                  {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
                             json{{"name", "HETCCL_HOST"},
                                  {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                             tokenEnv})},
        {"ports", json::array({json{{"containerPort", s.port}, {"name", "hetccl-root"}},
                               json{{"containerPort", s.metricsPort}, {"name", "metrics"}}})},
        {"resources", {{"limits", limits}}}};
    std::string task = names[&g - &c.groups.front()];
    json metadata = podMetadata(task);
    if (s.elastic)
      container["ports"] = json::array({json{{"containerPort", s.metricsPort}, {"name", "metrics"}}});
    // Elastic: a failed agent restarts in place and joins again.
    json podSpec = {{"restartPolicy", s.elastic ? "OnFailure" : "Never"},
                    {"containers", json::array({container})}};
    // Only nodes with the group's devices: the labels the cluster spec says
    // they carry (feature discovery's product, the device plugin's chip).
    if (!g.nodeLabels.empty()) {
      json match = json::array();
      for (const auto &[key, value] : g.nodeLabels)
        match.push_back({{"key", key}, {"operator", "In"}, {"values", json::array({value})}});
      podSpec["affinity"] = {
          {"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms", json::array({json{{"matchExpressions", match}}})}}}}}};
    }
    tasks.push_back({{"name", task},
                     {"replicas", g.nodes},
                     {"template", {{"metadata", metadata}, {"spec", podSpec}}}});
    rankBase += g.count();
  }
  // A failed pod restarts the whole job (like het-run --max-restarts, up
  // to maxRetry times) or, without restarts, ends it; elastic jobs say so
  // for the coordinator's task only, and start with it and one agent.
  json job = {
      {"apiVersion", "batch.volcano.sh/v1alpha1"},
      {"kind", "Job"},
      {"metadata", {{"name", s.jobName}}},
      {"spec",
       {{"schedulerName", "volcano"},
        {"minAvailable", s.elastic ? 2 : pods}, // gang scheduling: all pods or none
        {"plugins", {{"svc", json::array()}, {"env", json::array()}}}}}};
  if (!s.elastic)
    job["spec"]["policies"] = json::array({json{{"event", "PodFailed"}, {"action", failAction}},
                                           json{{"event", "PodEvicted"}, {"action", failAction}}});
  job["spec"]["tasks"] = tasks;
  if (s.maxRestarts > 0) job["spec"]["maxRetry"] = s.maxRestarts;
  if (!s.priorityClass.empty()) job["spec"]["priorityClassName"] = s.priorityClass;
  std::ostringstream os;
  os << "# Generated by het-run --emit-k8s for cluster '" << c.name << "' (" << world
     << " ranks, " << pods << " pods" << (s.elastic ? " and a coordinator; elastic" : "")
     << ").\n"
     << "# Needs Volcano and the device plugins; create the token secret first:\n"
     << "#   kubectl create secret generic " << s.jobName
     << "-token --from-literal=token=$(openssl rand -hex 32)\n";
  yaml(os, job, 0, false);
  return os.str();
}

} // namespace hetrun
