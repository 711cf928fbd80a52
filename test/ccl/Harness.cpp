#include "Harness.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <sys/wait.h>
#include <unistd.h>

namespace hetccltest {

double nowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::vector<RankExit> runRanks(int nranks, const RankFn& fn, int timeoutSec, const std::vector<int>& mayHang) {
  hetcclUniqueId id;
  if (hetcclGetUniqueId(&id) != hetcclSuccess) {
    fprintf(stderr, "hetcclGetUniqueId failed: %s\n", hetcclGetLastError(nullptr));
    return std::vector<RankExit>(nranks);
  }
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> pids(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      int rc = 1;
      try {
        rc = fn(r, nranks, id);
      } catch (...) {
        fprintf(stderr, "rank %d: exception\n", r);
      }
      fflush(stdout);
      fflush(stderr);
      _exit(rc);
    }
    pids[r] = pid;
  }
  std::vector<RankExit> out(nranks);
  std::vector<bool> done(nranks, false);
  int left = nranks;
  double deadline = nowSec() + timeoutSec;
  while (left > 0) {
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      for (int r = 0; r < nranks; ++r)
        if (pids[r] == p && !done[r]) {
          done[r] = true;
          --left;
          if (WIFEXITED(st)) out[r].status = WEXITSTATUS(st);
          if (WIFSIGNALED(st)) out[r].signal = WTERMSIG(st);
        }
      continue;
    }
    int others = 0;
    for (int r = 0; r < nranks; ++r) {
      bool hang = false;
      for (int h : mayHang) hang |= h == r;
      if (!done[r] && !hang) ++others;
    }
    if (others == 0 && !mayHang.empty()) {
      for (int r : mayHang)
        if (r < nranks && !done[r]) {
          kill(pids[r], SIGKILL);
          kill(pids[r], SIGCONT);
        }
    }
    if (nowSec() > deadline) {
      for (int r = 0; r < nranks; ++r)
        if (!done[r]) {
          out[r].timedOut = true;
          kill(pids[r], SIGKILL);
          kill(pids[r], SIGCONT);
        }
      deadline = nowSec() + 1e9;
    }
    usleep(2000);
  }
  return out;
}

hetcclComm_t initRank(int rank, int n, const hetcclUniqueId& id, int64_t timeoutMs) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = timeoutMs;
  hetcclComm_t comm = nullptr;
  if (hetcclCommInitRank(&comm, n, id, rank, &cfg) != hetcclSuccess) {
    fprintf(stderr, "rank %d init failed: %s\n", rank, hetcclGetLastError(nullptr));
    return nullptr;
  }
  return comm;
}

bool allOk(const std::vector<RankExit>& r) {
  bool ok = true;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i].status == 0 && !r[i].timedOut) continue;
    ok = false;
    fprintf(stderr, "rank %zu: exit %d signal %d%s\n", i, r[i].status, r[i].signal, r[i].timedOut ? " (timed out)" : "");
  }
  return ok;
}

} // namespace hetccltest
