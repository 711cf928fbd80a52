// Test harness: runs N real ranks as forked processes that talk through the
// real transports. A rank body returns 0 on success; anything else (or a
// crash, or running past the deadline) fails the test. Children leave with
// _exit so they never run the parent's GoogleTest teardown.
#pragma once

#include "het-c/hetccl.h"

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace hetccltest {

struct RankExit {
  int status = -1;      // exit code, or -1
  int signal = 0;       // terminating signal, or 0
  bool timedOut = false;
};

using RankFn = std::function<int(int rank, int nranks, const hetcclUniqueId& id)>;

// Forks nranks children running fn; waits at most timeoutSec (then kills
// them). The optional setup runs in each child before fn (e.g. setenv).
// Ranks listed in mayHang (e.g. a SIGSTOPped one) are killed once all the
// other ranks have exited.
std::vector<RankExit> runRanks(int nranks, const RankFn& fn, int timeoutSec = 120,
                               const std::vector<int>& mayHang = {});

// True when every rank exited with status 0; prints what went wrong.
bool allOk(const std::vector<RankExit>& r);

double nowSec();

// A rank's communicator with this per-call timeout, or null after printing
// why init failed (for rank bodies: RCHECK(comm, "init")).
hetcclComm_t initRank(int rank, int n, const hetcclUniqueId& id, int64_t timeoutMs);

} // namespace hetccltest

// Child-side checks: print and return non-zero from the rank body.
#define RCHECK(cond, ...)                                                                                    \
  do {                                                                                                       \
    if (!(cond)) {                                                                                           \
      fprintf(stderr, "rank check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                       \
      fprintf(stderr, __VA_ARGS__);                                                                          \
      fprintf(stderr, "\n");                                                                                 \
      return 1;                                                                                              \
    }                                                                                                        \
  } while (0)

#define RCALL(expr)                                                                                          \
  do {                                                                                                       \
    hetcclResult_t r_ = (expr);                                                                              \
    if (r_ != hetcclSuccess) {                                                                               \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr, hetcclGetErrorString(r_),         \
              hetcclGetLastError(nullptr));                                                                  \
      return 1;                                                                                              \
    }                                                                                                        \
  } while (0)
