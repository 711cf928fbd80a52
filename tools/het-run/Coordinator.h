//===- Coordinator.h - het-run --elastic --coordinate: a job of agents -*- C++ -*-===//
//
// A multi-node elastic job: one het-run coordinates (plans, compiles,
// decides) and runs no rank; on every node (pod) a het-run --join agent
// offers its group's devices (Agent.h). An agent is the unit of loss: when
// one of its ranks is SIGKILLed by someone else, or the agent's connection
// drops (the pod or machine is gone), its node's devices are lost, and the
// agent, if still there, is told to quit (a node that lost a device is
// drained whole; Kubernetes restarts its pod, which joins again). An agent
// that joins for a group missing nodes re-admits them. The coordinator runs
// each attempt by giving every agent its ranks (by the plan's groups), the
// executable, the rendezvous and stop orders, and gathers how each rank
// ended into one JobResult, as runJob does for local ranks.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_COORDINATOR_H
#define HET_RUN_COORDINATOR_H

#include "Supervisor.h"

#include "het/Plan/ClusterSpec.h"

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hetrun {

class AgentChannel;
class AgentListener;
class JobMetrics;

class Coordinator {
public:
  /// Listens for agents on address:port (0: a free port) for the cluster
  /// `original` (its spec's JSON in `spec`); throws std::runtime_error.
  /// The agents' ranks' metrics lines go to `metrics` (the coordinator's
  /// /metrics and /status), if not null. Only agents that prove `token`
  /// (the job token) join; one silent for `peerTimeoutS` is gone.
  Coordinator(const nlohmann::json &spec, const het::plan::Cluster &original,
              const std::string &address, int port, JobMetrics *metrics, std::string token,
              double peerTimeoutS);
  ~Coordinator();
  int port() const;

  /// Waits until every node of every group has an agent, `timeoutS` has
  /// passed or het-run is interrupted; returns whether all are there.
  bool waitForAgents(double timeoutS);
  /// Devices of the cluster without an agent, by group (ElasticPlans::forLost).
  std::map<std::string, int> missing() const;
  /// Whether any agent is there.
  bool anyAgent() const;
  /// Whether agents have joined that the running plan does not use.
  bool newcomers() const;
  /// The agents present, as "group xN, ...".
  std::string agentsText() const;

  /// Runs one attempt of `cluster` (the original without missing()):
  /// `base` gives the program, its arguments, the attempt, timeouts,
  /// environment and stop hook. Fates are indexed by global rank.
  JobResult run(const het::plan::Cluster &cluster, const JobOptions &base);
  /// The highest step the agents' ranks reported in the last attempt.
  int64_t lastStep() const { return lastStep_; }
  /// Tells the agents holding `lostRanks` (global ranks of the last
  /// attempt) that their node is drained, and forgets them. Returns them as
  /// "agent of G on H" phrases.
  std::vector<std::string> drain(const std::vector<int> &lostRanks);
  /// Tells every agent the job is over (status 0 or 1).
  void finish(int status, const std::string &reason);

private:
  struct Agent {
    int id = 0;
    std::string group, host, address;
    int freePort = 0;
    std::unique_ptr<AgentChannel> channel;
    bool alive = true, inPlan = false;
    std::set<std::string> programsSent;
    std::vector<int> ranks;  // of the running attempt
    bool running = false;    // started, not reported
    nlohmann::json result;   // the last "done"
    std::thread reader;
  };
  void acceptLoop();
  void pingLoop();
  void readLoop(Agent *agent);
  int usable(const std::string &group) const; // alive agents of a group (lock held)

  nlohmann::json spec_;
  std::string token_;  // the job token: agents prove it, and so does the coordinator
  double peerTimeoutS_; // an agent silent this long is gone
  std::map<std::string, int> perNode_, nodes_; // by group
  std::vector<std::string> groupOrder_;
  std::unique_ptr<AgentListener> listener_;
  std::thread acceptor_, pinger_;
  bool stopping_ = false;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Agent>> agents_;
  int nextId_ = 0;
  int64_t lastStep_ = -1;
  JobMetrics *metrics_ = nullptr;
};

} // namespace hetrun

#endif
