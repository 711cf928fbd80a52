//===- Agent.h - het-run --join: one node's ranks of a coordinated job -*- C++ -*-===//
//
// On a machine (a pod) of a multi-node elastic job, `het-run --join
// COORDINATOR --group G` offers the node's devices of group G to the
// coordinator (het-run --elastic --coordinate) and runs the ranks it is
// given, attempt by attempt: it receives the executable (once per
// executable), starts its ranks with the job's environment, relays stop
// orders (a failure elsewhere, or "stop after the next checkpoint"), and
// reports how each rank ended. It and the coordinator first prove to each
// other that they hold the job token, and it runs only an executable whose
// SHA-256 the coordinator announced in a sealed message (AgentChannel.h).
// It exits when the coordinator says the job
// is over (0), drains its node (1: a device of it was lost), or is gone
// (1). See docs/het-run.md, "Elastic jobs on several machines".
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_AGENT_H
#define HET_RUN_AGENT_H

#include <string>

namespace hetrun {

struct AgentOptions {
  std::string coordinator;  // HOST:PORT
  std::string group;        // the cluster spec's device group of this node
  double joinTimeoutS = 300;
  std::string workDir;      // where executables received are kept ("": a temporary one)
  int metricsPort = -1;     // serve this node's ranks' metrics (-1: no)
  std::string metricsAddress = "127.0.0.1", metricsLog;
  int failWaitMs = 0, graceMs = 2000;
  std::string token;        // the job token (het/Run/JobToken.h), proved to the coordinator
  double peerTimeoutS = 30; // a coordinator silent this long is gone
  bool consoleAuth = false; // the metrics server's read-only views need the token too
};

/// Runs the agent until the coordinator ends it; returns het-run's exit
/// status.
int runAgent(const AgentOptions &options);

} // namespace hetrun

#endif
