//===- Supervisor.cpp - run the ranks of one local job --------------------===//
#include "Supervisor.h"
#include "het/Support/CoreBinding.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <pthread.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hetrun {

namespace {
std::atomic<int> gStop{0};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string signalName(int sig) {
  const char *abbrev = sigabbrev_np(sig);
  return std::to_string(sig) + (abbrev ? " (SIG" + std::string(abbrev) + ")" : "");
}

/// One output stream of one rank, cut into lines.
struct Stream {
  int fd = -1;
  int rank = 0;
  FILE *out = stdout;
  std::string partial;
  JobResult *progress = nullptr; // where the steps the ranks report go

  void emit(const std::string &line) {
    std::fprintf(out, "[rank %d] %s\n", rank, line.c_str());
    std::fflush(out);
    // The step a restarted job resumed at, for het-run --elastic's log (the
    // last finished step comes from the ranks' metrics).
    long long step = -1;
    if (std::sscanf(line.c_str(), "resumed from step %lld", &step) == 1)
      progress->resumedStep = static_cast<int64_t>(step);
    else if (std::sscanf(line.c_str(), "stopped after the checkpoint of step %lld", &step) == 1)
      progress->stoppedStep = static_cast<int64_t>(step);
    double ms = 0;
    char key[160];
    if (std::sscanf(line.c_str(), "iteration time %lf ms", &ms) == 1)
      progress->iterationSeconds = std::max(progress->iterationSeconds, ms / 1e3);
    else if (std::sscanf(line.c_str(), "plan predicted %lf ms", &ms) == 1)
      progress->predictedSeconds = ms / 1e3;
    else if (std::sscanf(line.c_str(), "plan key: %159s", key) == 1)
      progress->planKey = key;
  }
  // Returns false at EOF.
  bool pump() {
    char buf[65536];
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (r <= 0) {
      if (!partial.empty()) emit(partial);
      partial.clear();
      ::close(fd);
      fd = -1;
      return false;
    }
    partial.append(buf, size_t(r));
    size_t start = 0, nl;
    while ((nl = partial.find('\n', start)) != std::string::npos) {
      emit(partial.substr(start, nl - start));
      start = nl + 1;
    }
    partial.erase(0, start);
    // A rank that never prints a newline must not grow our memory forever.
    if (partial.size() > (1u << 20)) {
      emit(partial);
      partial.clear();
    }
    return true;
  }
};

[[noreturn]] void execRank(const JobOptions &o, int local, int outFd, int errFd,
                           const std::string &root, const std::string &token, int rootListenFd) {
  // Die with het-run even if it is SIGKILLed: no orphaned rank keeps running.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) _exit(127);
  ::setpgid(0, 0); // own group: signals reach the rank's children too
  ::dup2(outFd, 1);
  ::dup2(errFd, 2);
  int world = o.worldSize > 0 ? o.worldSize : o.nranks;
  ::setenv("RANK", std::to_string(o.globalRank(local)).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nranks).c_str(), 1);
  ::setenv("HETCCL_ROOT", root.c_str(), 1);
  ::unsetenv("HETCCL_ROOT_FD"); // never a stale one from het-run's own environment
  if (rootListenFd >= 0) {
    int kept = ::dup(rootListenFd); // a dup is not close-on-exec: rank 0 gets it
    if (kept < 0) {
      dprintf(2, "het-run: cannot hand the root socket to rank 0: %s\n", std::strerror(errno));
      _exit(127);
    }
    ::setenv("HETCCL_ROOT_FD", std::to_string(kept).c_str(), 1);
  }
  ::setenv("HETCCL_TOKEN", token.c_str(), 1);
  ::setenv("HET_RESTART", std::to_string(o.attempt).c_str(), 1);
  if (o.collectiveTimeoutMs > 0)
    ::setenv("HETCCL_TIMEOUT_MS", std::to_string(o.collectiveTimeoutMs).c_str(), 1);
  for (auto &[k, v] : o.env) ::setenv(k.c_str(), v.c_str(), 1);
  if (size_t(local) < o.rankEnv.size())
    for (auto &[k, v] : o.rankEnv[local]) ::setenv(k.c_str(), v.c_str(), 1);
  if (o.bindToCores) {
    // By local rank (het/Support/CoreBinding.h); a pipeline rank binds
    // itself again by its place in the plan, from the CPUs listed here.
    std::vector<int> cpus = het::support::allowedCpus();
    ::setenv(het::support::bindCpusVariable(), het::support::formatCpuList(cpus).c_str(), 1);
    std::string why =
        het::support::bindProcess(het::support::coresOfRank(cpus, local, o.nranks));
    if (!why.empty())
      std::fprintf(stderr, "het-run: warning: rank %d runs unbound: %s\n", o.globalRank(local),
                   why.c_str());
  } else {
    ::unsetenv(het::support::bindCpusVariable());
  }
  std::vector<char *> args;
  for (const std::string &a : o.argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "het-run: cannot execute %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}
} // namespace

void requestStop(int signal) { gStop.store(signal); }
int stopSignal() { return gStop.load(); }

std::string RankFate::describe() const {
  if (exited) return "exited with status " + std::to_string(status);
  return std::string(killedByUs ? "terminated by het-run with signal " : "killed by signal ") +
         signalName(signal);
}

std::string randomToken() {
  unsigned char b[32];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t r = ::getrandom(b + got, sizeof b - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
    got += size_t(r);
  }
  static const char *hex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

RootListener::RootListener(const std::string &ipv4) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ipv4.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("cannot listen on '" + ipv4 + "': not an IPv4 address");
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0)
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  socklen_t len = sizeof a;
  if (::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd_, 128) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len) != 0) {
    int e = errno;
    close();
    throw std::runtime_error("cannot listen on a free port of " + ipv4 + ": " + std::strerror(e));
  }
  port_ = ntohs(a.sin_port);
}

void RootListener::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

JobResult runJob(const JobOptions &o) {
  JobResult res;
  // Without --root, het-run listens at the root address itself and hands
  // the socket to rank 0 (HETCCL_ROOT_FD): a port merely picked here could
  // be taken by any process on the host before rank 0 binds it.
  std::optional<RootListener> rootListener;
  if (o.root.empty())
    rootListener.emplace();
  std::string root = rootListener ? "127.0.0.1:" + std::to_string(rootListener->port()) : o.root;
  int rootFd = rootListener ? rootListener->fd() : o.rootListenFd;
  std::string token = o.token.empty() ? randomToken() : o.token;
  double t0 = now();
  std::fprintf(stderr, "het-run: attempt %d: starting %d rank%s (root %s)\n", o.attempt, o.nranks,
               o.nranks == 1 ? "" : "s", root.c_str());
  std::fflush(stdout);
  std::fflush(stderr);

  std::vector<pid_t> pids(o.nranks, -1);
  std::vector<Stream> streams;
  res.fates.resize(o.nranks);
  std::vector<bool> done(o.nranks, false);
  int alive = 0;
  // If starting rank r fails, the ranks already started must not outlive us.
  auto abandon = [&](const std::string &what) {
    std::string msg = what + ": " + std::strerror(errno);
    for (pid_t p : pids)
      if (p > 0) {
        ::kill(-p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    for (Stream &s : streams) ::close(s.fd);
    throw std::runtime_error(msg);
  };
  for (int r = 0; r < o.nranks; ++r) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) abandon("pipe");
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      abandon("pipe");
    }
    // A stop request may come before the rank installed its handler: the
    // child starts with SIGUSR1 blocked (inherited from this thread's mask
    // at fork, kept across exec), so it waits instead of killing the rank.
    sigset_t usr1, before;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (o.stopAtCheckpoint) ::pthread_sigmask(SIG_BLOCK, &usr1, &before);
    pid_t pid = ::fork();
    if (pid != 0 && o.stopAtCheckpoint) ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (pid < 0) {
      for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
      abandon("fork");
    }
    if (pid == 0)
      execRank(o, r, out[1], err[1], root, token, o.globalRank(r) == 0 ? rootFd : -1);
    ::setpgid(pid, pid); // also here: no race with the child's own call
    ::close(out[1]);
    ::close(err[1]);
    int g = o.globalRank(r);
    streams.push_back({out[0], g, stdout, {}, &res});
    streams.push_back({err[0], g, stderr, {}, &res});
    pids[r] = pid;
    ++alive;
  }
  // Rank 0 holds the root socket now; het-run's copy would keep the port
  // bound after rank 0 is gone.
  if (rootListener)
    rootListener->close();

  bool failing = false;
  double failAt = 0, termAt = 0;
  bool termSent = false, killSent = false, stopAsked = false;
  // The signals sent to each rank: a rank is "killed by us" only if one of
  // them is what ended it (a rank that SIGKILLs itself, or is SIGKILLed by
  // the OOM killer, while we only sent SIGTERM was not).
  std::vector<std::vector<int>> sent(o.nranks);
  auto signalAll = [&](int sig) {
    for (int r = 0; r < o.nranks; ++r)
      if (!done[r]) {
        sent[r].push_back(sig);
        ::kill(-pids[r], sig);
      }
  };
  auto fail = [&](int rank, const std::string &cause, double at) {
    if (failing) return;
    failing = true;
    failAt = now();
    res.failedRank = rank;
    res.cause = cause;
    std::string who = rank >= 0 ? "rank " + std::to_string(rank) + " " : "";
    std::fprintf(stderr, "het-run: %s%s after %.3f s; stopping the job\n", who.c_str(), cause.c_str(), at);
  };
  // Which failure is the cause? A rank SIGKILLed with threads becomes
  // waitable only once all its threads are gone, and by then its peers may
  // already have exited with an error about it. So a failure by exit status
  // waits a moment for a death by signal to show up; a death by signal
  // decides at once.
  const double kSettleS = 0.25;
  int pendingRank = -1;
  std::string pendingCause;
  double pendingAt = 0, pendingSeen = 0;
  bool pendingSignal = false;

  double drainUntil = 0;
  for (;;) {
    // Reap.
    int st = 0;
    pid_t p;
    while ((p = ::waitpid(-1, &st, WNOHANG)) > 0) {
      for (int r = 0; r < o.nranks; ++r) {
        if (pids[r] != p || done[r]) continue;
        done[r] = true;
        --alive;
        RankFate &f = res.fates[r];
        f.seconds = now() - t0;
        f.exited = WIFEXITED(st);
        f.status = f.exited ? WEXITSTATUS(st) : 0;
        f.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        // "Killed by us" only if our signal is what ended it; a rank that
        // exits with a status after our SIGTERM reports that status.
        f.killedByUs = !f.exited && std::find(sent[r].begin(), sent[r].end(), f.signal) !=
                                        sent[r].end();
        bool ok = f.exited && f.status == 0;
        if (!ok && !f.killedByUs && (pendingRank < 0 || (!f.exited && !pendingSignal))) {
          if (pendingRank < 0) pendingSeen = now();
          pendingRank = o.globalRank(r);
          pendingCause = f.describe();
          pendingAt = f.seconds;
          pendingSignal = !f.exited;
        }
      }
    }
    if (pendingRank >= 0 && (pendingSignal || alive == 0 || now() - pendingSeen >= kSettleS))
      fail(pendingRank, pendingCause, pendingAt);
    if (alive == 0 && drainUntil == 0) drainUntil = now() + 0.5;

    // Policies.
    double t = now();
    if (int sig = stopSignal(); sig && !failing) fail(-1, "het-run received signal " + signalName(sig), t - t0);
    if (!failing && o.abort)
      if (std::string why = o.abort(); !why.empty()) fail(-1, why, t - t0);
    if (o.jobTimeoutS > 0 && !failing && t - t0 > o.jobTimeoutS)
    {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", o.jobTimeoutS);
      fail(-1, std::string("job ran past its timeout of ") + limit + " s", t - t0);
    }
    if (!failing && !stopAsked && alive > 0 && o.stopAtCheckpoint && o.stopAtCheckpoint()) {
      // To the rank only, not its process group: a child of it would die.
      for (int r = 0; r < o.nranks; ++r)
        if (!done[r]) ::kill(pids[r], SIGUSR1);
      stopAsked = true;
      std::fprintf(stderr, "het-run: asked the ranks to stop after their next checkpoint\n");
    }
    if (failing && alive > 0 && !termSent && t - failAt >= o.failWaitMs * 1e-3) {
      signalAll(SIGTERM);
      signalAll(SIGCONT); // a stopped rank must run to act on SIGTERM
      termSent = true;
      termAt = t;
    }
    if (termSent && alive > 0 && !killSent && t - termAt >= o.graceMs * 1e-3) {
      signalAll(SIGKILL);
      killSent = true;
    }

    // Output.
    std::vector<pollfd> fds;
    std::vector<Stream *> owners;
    for (Stream &s : streams)
      if (s.fd >= 0) {
        fds.push_back({s.fd, POLLIN, 0});
        owners.push_back(&s);
      }
    if (alive == 0 && (fds.empty() || now() > drainUntil)) break;
    int n = ::poll(fds.data(), fds.size(), 20);
    if (n > 0)
      for (size_t i = 0; i < fds.size(); ++i)
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) owners[i]->pump();
  }
  for (Stream &s : streams)
    if (s.fd >= 0) {
      if (!s.partial.empty()) s.emit(s.partial);
      ::close(s.fd);
    }
  res.seconds = now() - t0;
  res.ok = !failing;
  return res;
}

} // namespace hetrun
