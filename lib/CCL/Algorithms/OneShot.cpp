// One-shot all-reduce for small messages among ranks of one host: every
// rank copies its input once into the board of its own shm segment
// (Transport/ShmBoard.h), then reads every rank's input straight from the
// peers' boards and reduces them in rank order. One synchronisation step
// instead of 2 log2(p) or 2(p-1) message hops, no message headers, no
// allocation, and the same bits on every rank (the order is fixed, not the
// order of arrival). It reads (p-1) times the buffer where ring moves 2(p-1)/p
// of it, so it wins only below a crossover (ShmBoard.h; HETCCL_ONESHOT_BYTES).
//
// Waiting spins briefly, then yields the core (ranks may outnumber cores),
// with no system call while the data is already there. The slow path checks
// abort, the timeout and the peers' health as Fabric::run does.
#include "Algorithms/Algorithms.h"

#include "Common/Clock.h"
#include "Common/Error.h"
#include "Transport/ShmBoard.h"

#include <cstring>
#include <sched.h>
#include <time.h>

namespace hetccl {

bool oneShotApplies(const hetcclComm* c, size_t bytes) {
  // oneShotLimit is 0 unless every rank is on this host (Comm.cpp).
  return bytes != 0 && bytes <= c->oneShotLimit;
}

// Waits until ready() holds; `what` names the wait in the timeout message.
template <typename Ready> static void waitFor(hetcclComm* c, int peer, Ready ready, const char* what) {
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
                              std::to_string(peer) + " (" + what + ", one-shot all-reduce)");
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

void oneShotAllReduce(hetcclComm* c, const char* send, char* recv, size_t count, const Elem& e) {
  const size_t bytes = count * e.size;
  const int p = c->nranks, me = c->rank;
  const uint64_t k = ++c->oneShotCalls;
  const int slot = int(k & 1);
  char* mine = c->segOfRank[me]->board();
  BoardControl* myCtl = boardControl(mine);
  // A peer that failed or was aborted poisoned our segment: fail as the
  // message path would, even if its input for this call is on its board.
  int32_t failed = c->segOfRank[me]->header()->errorRank.load(std::memory_order_acquire);
  if (failed > 0) fail(hetcclRemoteError, "rank " + std::to_string(failed - 1) + " on this host reported an error");

  // 1. Slot k%2 held call k-2: every peer must have read it.
  if (k > 2)
    for (int r = 0; r < p; ++r) {
      if (r == me) continue;
      BoardControl* ctl = boardControl(c->segOfRank[r]->board());
      waitFor(c, r, [&] { return ctl->done.load(std::memory_order_acquire) >= k - 2; }, "reading call k-2");
    }

  // 2. Publish this rank's input.
  memcpy(boardData(mine, c->oneShotBytes, slot), send, bytes);
  myCtl->slot[slot].bytes = bytes;
  myCtl->slot[slot].seq.store(k, std::memory_order_release);

  // 3. Reduce every rank's input in rank order: ((x0 op x1) op x2) ...
  for (int r = 0; r < p; ++r) {
    char* board = c->segOfRank[r]->board();
    BoardSlot& s = boardControl(board)->slot[slot];
    if (r != me) waitFor(c, r, [&] { return s.seq.load(std::memory_order_acquire) == k; }, "its input");
    if (s.bytes != bytes)
      fail(hetcclInvalidUsage, "rank " + std::to_string(r) + " all-reduces " + std::to_string(s.bytes) +
                                   " bytes where this rank has " + std::to_string(bytes) +
                                   " (mismatched counts, types or collectives across ranks?)");
    const char* in = boardData(board, c->oneShotBytes, slot);
    if (r == 0 && me == 0) {
      if (recv != send) memcpy(recv, send, bytes); // the same bits, from this core's cache
    } else if (r == 0) {
      memcpy(recv, in, bytes);
    } else {
      e.fn(recv, in, count);
    }
  }

  // 4. This rank has read call k: its slot k%2 may be reused by the peers.
  myCtl->done.store(k, std::memory_order_release);
}

} // namespace hetccl
