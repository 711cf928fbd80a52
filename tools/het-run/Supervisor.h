//===- Supervisor.h - run the ranks of one local job ----------*- C++ -*-===//
//
// Starts N rank processes with hetccl's environment bootstrap, streams their
// output with a "[rank k]" prefix, and turns the first failure into a clean
// job error: the other ranks get SIGTERM, then SIGKILL after a grace period,
// and nothing is left running when runJob returns.
//
#ifndef HET_RUN_SUPERVISOR_H
#define HET_RUN_SUPERVISOR_H

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace hetrun {

struct JobOptions {
  int nranks = 1;        // ranks started here
  int worldSize = 0;     // 0: nranks (more when several het-runs share one job)
  int rankOffset = 0;    // RANK of this het-run's first rank
  /// RANK of each local rank when they are not rankOffset + 0, 1, ... (a
  /// het-run --join agent holds the ranks the coordinator gives it).
  std::vector<int> ranks;
  std::string root;      // "": 127.0.0.1 and a free port
  /// With `root`: a socket already listening at root's port, which the rank
  /// whose RANK is 0 gets as HETCCL_ROOT_FD (a --join agent holds the port
  /// it offered the coordinator); -1: rank 0 binds the port itself.
  int rootListenFd = -1;
  std::string token;     // "": a fresh random token
  std::vector<std::string> argv;
  int64_t collectiveTimeoutMs = 0; // 0: leave HETCCL_TIMEOUT_MS alone
  int failWaitMs = 0;    // after a failure, let the others notice before SIGTERM
  int graceMs = 2000;    // SIGTERM -> SIGKILL
  double jobTimeoutS = 0; // 0: none
  int attempt = 0;       // HET_RESTART
  /// Bind each rank to its cores (het/Support/CoreBinding.h); false: leave
  /// them to the scheduler (het-run --bind-to none).
  bool bindToCores = true;
  /// Extra environment of every rank (e.g. where to report metrics).
  std::vector<std::pair<std::string, std::string>> env;
  /// Extra environment per local rank (e.g. the device group of a cluster).
  std::vector<std::vector<std::pair<std::string, std::string>>> rankEnv;
  /// Polled while the ranks run: once it returns true, every rank gets
  /// SIGUSR1 (once), which asks a pipeline started with
  /// HET_STOP_AT_CHECKPOINT=1 to stop after its next checkpoint
  /// (lib/Runtime/StopRequest.h). When set, ranks start with SIGUSR1
  /// blocked (the pipeline unblocks it once it has a handler).
  std::function<bool()> stopAtCheckpoint;
  /// Polled while the ranks run: once it returns a reason, the job is
  /// stopped as on a failure, with that cause (a coordinator's order).
  std::function<std::string()> abort;
  /// The RANK of local rank `local`.
  int globalRank(int local) const {
    return local < static_cast<int>(ranks.size()) ? ranks[local] : rankOffset + local;
  }
};

struct RankFate {
  bool exited = false;   // else killed by `signal`
  int status = 0, signal = 0;
  bool killedByUs = false;
  double seconds = 0;    // since the job started
  std::string describe() const;
};

struct JobResult {
  bool ok = false;
  int failedRank = -1;   // global rank of the first failure
  std::string cause;     // "exited with status 3", "killed by signal 9 (SIGKILL)", ...
  std::vector<RankFate> fates;
  double seconds = 0;
  int64_t resumedStep = -1; // "resumed from step N" (a rank resumed)
  int64_t stoppedStep = -1; // "stopped after the checkpoint of step N"
  /// What a pipeline reports at its end: "iteration time X ms" (the
  /// slowest rank's), "plan predicted Y ms" and "plan key: K"
  /// (het/Plan/MeasuredPlans.h); negative or empty where none did.
  double iterationSeconds = -1, predictedSeconds = -1;
  std::string planKey;
};

/// A fresh random job token (64 hex characters).
std::string randomToken();
/// A TCP socket listening on an IPv4 address at a port the kernel picks,
/// held until a rank takes it over: a port merely found free could be taken
/// by any process on the host before rank 0 binds it. Close-on-exec; closed
/// on destruction.
class RootListener {
public:
  explicit RootListener(const std::string &ipv4 = "127.0.0.1"); // throws
  ~RootListener() { close(); }
  RootListener(const RootListener &) = delete;
  RootListener &operator=(const RootListener &) = delete;
  int fd() const { return fd_; }
  int port() const { return port_; }
  void close();

private:
  int fd_ = -1, port_ = 0;
};

/// Runs one attempt of the job. Prints progress lines "het-run: ..." to
/// stderr. Returns once every rank has been reaped.
JobResult runJob(const JobOptions &opts);

/// Set from a signal handler: the job is being interrupted (SIGINT/SIGTERM
/// to het-run); runJob terminates the ranks and returns a failure.
void requestStop(int signal);
int stopSignal();

} // namespace hetrun

#endif
