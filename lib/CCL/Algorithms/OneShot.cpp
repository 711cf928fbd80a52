// One-shot all-reduce for small messages among ranks of one host: every
// rank copies its input once into the board of its own shm segment
// (Transport/ShmBoard.h), then reads every rank's input straight from the
// peers' boards and reduces them in rank order. One synchronisation step
// instead of 2 log2(p) or 2(p-1) message hops, no message headers, no
// allocation, and the same bits on every rank (the order is fixed, not the
// order of arrival). It reads (p-1) times the buffer where ring moves 2(p-1)/p
// of it, so it wins only below a crossover (ShmBoard.h; HETCCL_ONESHOT_BYTES).
//
// Waits are BoardWait.h's: spin, then yield, no system call while the data
// is already there.
#include "Algorithms/Algorithms.h"

#include "Algorithms/BoardWait.h"
#include "Common/Error.h"
#include "Transport/ShmBoard.h"

#include <cstring>

namespace hetccl {

bool oneShotApplies(const hetcclComm* c, size_t bytes) {
  // oneShotLimit is 0 unless every rank is on this host (Comm.cpp).
  return bytes != 0 && bytes <= c->oneShotLimit;
}

void oneShotAllReduce(hetcclComm* c, const char* send, char* recv, size_t count, const Elem& e) {
  const size_t bytes = count * e.size;
  const int p = c->nranks, me = c->rank;
  const uint64_t k = ++c->boardCalls;
  const int slot = int(k & 1);
  char* mine = c->segOfRank[me]->board();
  BoardControl* myCtl = boardControl(mine);
  failIfPeerReportedError(c);

  // 1. Slot k%2 held call k-2: every peer must have read it.
  if (k > 2)
    for (int r = 0; r < p; ++r) {
      if (r == me) continue;
      BoardControl* ctl = boardControl(c->segOfRank[r]->board());
      waitOnBoard(
          c, r, [&] { return ctl->done.load(std::memory_order_acquire) >= k - 2; }, "reading call k-2", "one-shot");
    }

  // 2. Publish this rank's input.
  memcpy(boardData(mine, c->boardBytes, slot), send, bytes);
  myCtl->slot[slot].bytes = bytes;
  myCtl->slot[slot].totalBytes = bytes;
  myCtl->slot[slot].seq.store(k, std::memory_order_release);

  // 3. Reduce every rank's input in rank order: ((x0 op x1) op x2) ...
  for (int r = 0; r < p; ++r) {
    char* board = c->segOfRank[r]->board();
    BoardSlot& s = boardControl(board)->slot[slot];
    if (r != me)
      waitOnBoard(
          c, r, [&] { return s.seq.load(std::memory_order_acquire) == k; }, "its input", "one-shot");
    if (s.bytes != bytes)
      fail(hetcclInvalidUsage, "rank " + std::to_string(r) + " all-reduces " + std::to_string(s.bytes) +
                                   " bytes where this rank has " + std::to_string(bytes) +
                                   " (mismatched counts, types or collectives across ranks?)");
    const char* in = boardData(board, c->boardBytes, slot);
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
