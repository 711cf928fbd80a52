// Waiting on a peer's shm board (Transport/ShmBoard.h), shared by the
// board algorithms (OneShot.cpp, TwoShot.cpp): spin briefly, then yield the
// core (ranks may outnumber cores), with no system call while the data is
// already there. The slow path checks abort, the timeout and the peer's
// health as Fabric::run does.
#pragma once

#include "Comm.h"
#include "Common/Clock.h"
#include "Common/Error.h"
#include "Transport/Progress.h"

#include <sched.h>
#include <string>
#include <time.h>

namespace hetccl {

// Waits until ready() holds; `what` and `algorithm` name the wait in the
// timeout message.
template <typename Ready>
void waitOnBoard(hetcclComm* c, int peer, Ready ready, const char* what, const char* algorithm) {
  for (int i = 0; i < 256; ++i) {
    if (ready()) return;
    cpuRelax();
  }
  const Deadline dl = Deadline::afterMs(c->timeoutMs);
  int64_t nextCheck = 0;
  for (uint64_t idle = 0;; ++idle) {
    if (ready()) return;
    if (c->aborted.load(std::memory_order_relaxed)) fail(hetcclAborted, "communicator aborted");
    int64_t now = nowNs();
    if (now >= dl.atNs)
      fail(hetcclTimeout, "timed out after " + std::to_string(c->timeoutMs) + " ms waiting on rank " +
                              std::to_string(peer) + " (" + what + ", " + algorithm + " all-reduce)");
    if (now >= nextCheck) {
      try {
        c->fabric.links[peer]->checkPeer();
      } catch (const CclError&) {
        // The peer may have posted what we wait for and exited (it finished
        // the collective) since ready() was last false: look once more
        // before calling it dead, as the message path does.
        if (ready()) return;
        throw;
      }
      nextCheck = now + 5 * 1000000;
    }
    if (idle < 20000) {
      sched_yield();
    } else {
      timespec ts{0, 50000};
      nanosleep(&ts, nullptr);
    }
  }
}

// A local peer that failed or was aborted poisoned this rank's segment:
// fail as the message path would, even if the peer's data for this call is
// on its board.
inline void failIfPeerReportedError(hetcclComm* c) {
  int32_t failed = c->segOfRank[c->rank]->header()->errorRank.load(std::memory_order_acquire);
  if (failed > 0) fail(hetcclRemoteError, "rank " + std::to_string(failed - 1) + " on this host reported an error");
}

} // namespace hetccl
