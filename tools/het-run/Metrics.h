//===- Metrics.h - a job's live metrics: Prometheus, status, log -*- C++ -*-===//
//
// het-run --metrics-port P: the ranks write one JSON line per step to a
// pipe (HET_METRICS_FD; lib/Runtime/RankMetrics.cpp); a reader thread keeps
// each rank's latest figures and totals, and an HTTP server (cpp-httplib)
// serves them as Prometheus text (/metrics) and as a status table of the
// ranks by device group (/status, which `het-run --status HOST:PORT`
// prints). --metrics-log F appends every line, timed, as JSON lines.
// Requests that change the job (POST /admit) must be signed with the job
// token (het/Run/RequestSignature.h); with --console-auth the read-only
// views need the token too. Refusals are 401 (no credential) or 403, and
// change nothing.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_METRICS_H
#define HET_RUN_METRICS_H

#include "Supervisor.h"

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace httplib {
class Server;
}
namespace het::run {
class RequestVerifier;
}

namespace hetrun {

class LostDevices;

class JobMetrics {
public:
  /// Opens the pipe (and the log, if any); throws std::runtime_error.
  /// `rankOffset`: the global rank of this het-run's first rank.
  JobMetrics(const std::string &logFile, int rankOffset);
  ~JobMetrics();
  /// The environment that makes a rank report (HET_METRICS_FD).
  std::pair<std::string, std::string> rankEnvironment() const;
  /// Serves /metrics and /status on address:port (port 0: a free one);
  /// returns the port. Throws std::runtime_error when it cannot bind.
  /// Requests that change the job are checked against `token` (the job
  /// token; empty: every such request is refused), and so are the
  /// read-only views when `protectViews`.
  int serve(const std::string &address, int port, const std::string &token, bool protectViews);
  /// Also serve POST /admit?group=G[&count=N] (het-run --admit) from now
  /// on; without it the server answers that the job is not elastic.
  void acceptAdmissions(LostDevices *devices);
  /// What POST /admit answers when admissions are not accepted.
  void refuseAdmissions(const std::string &reason);
  /// The port serve() bound (-1: not serving).
  int port() const { return port_; }
  /// A new attempt of `ranks` ranks (their groups, if known).
  void beginAttempt(int attempt, int ranks, const std::vector<std::string> &groups);
  /// A new attempt of the ranks `globalRanks` (a het-run --join agent's).
  void beginAttempt(int attempt, const std::vector<int> &globalRanks,
                    const std::vector<std::string> &groups);
  /// The fates of the attempt's ranks.
  void endAttempt(const JobResult &result);
  void countReplan();
  /// The highest step any rank of the current attempt finished (-1: none).
  int64_t lastStep() const;

  /// A rank's metrics line that came another way than the pipe (an
  /// agent's, relayed to its coordinator); bad lines are ignored.
  void ingest(const std::string &line) { take(line); }
  /// Also hand every line the pipe brings to `forward` (an agent relays
  /// its ranks' lines to the coordinator). Call before the ranks start.
  void forwardLines(std::function<void(const std::string &)> forward);

  std::string prometheus() const;
  std::string status() const;

private:
  struct Rank {
    std::map<std::string, std::string> labels;
    std::string state = "starting";
    int64_t step = -1;
    double stepSeconds = 0, samplesPerSecond = 0, loss = 0;
    double predictedStepSeconds = 0; // the plan's (0: none)
    bool hasLoss = false;
    double collective = 0, p2p = 0, stall = 0; // totals
    int64_t rss = 0, globalBatch = 0;
  };
  void readLoop();
  void take(const std::string &line);
  void takeLine(const std::string &line);

  mutable std::mutex mutex_;
  std::vector<Rank> ranks_;
  std::map<int, int> localOf_; // global rank -> index into ranks_
  int attempt_ = 0, replans_ = 0, rankOffset_ = 0, port_ = -1;
  int readFd_ = -1, writeFd_ = -1;
  std::ofstream log_;
  std::atomic<bool> stop_{false}, reading_{false};
  std::thread reader_, server_;
  std::unique_ptr<httplib::Server> http_;
  std::function<void(const std::string &)> forward_;
  std::atomic<LostDevices *> admissions_{nullptr};
  std::unique_ptr<het::run::RequestVerifier> verifier_;
  bool protectViews_ = false;
  std::string admissionRefusal_ =
      "this job is not elastic (het-run --elastic): it has no lost devices to re-admit";
};

/// HOST and PORT of "HOST:PORT"; throws std::runtime_error naming `option`.
std::pair<std::string, int> hostAndPort(const std::string &address, const char *option,
                                        bool portZero = false);

/// Fetches http://address/status (het-run --status), with the job token
/// as a bearer credential when one is given; throws std::runtime_error
/// naming the address when it cannot.
std::string fetchStatus(const std::string &address, const std::string &token);

} // namespace hetrun

#endif
