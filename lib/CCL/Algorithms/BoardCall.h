// One call on the shm boards (Transport/ShmBoard.h), the protocol the board
// algorithms share (OneShot.cpp: a call per all-reduce; TwoShot.cpp: a call
// per chunk): take the next call number k and its slot k%2, wait until
// every peer is done with call k-2 there, publish this rank's input, read
// the peers' inputs of call k (checking they are the same all-reduce), and
// say this rank is done with call k.
//
// Waiting spins briefly, then yields the core (ranks may outnumber cores),
// with no system call while the data is already there. The slow path checks
// abort, the timeout and the peer's health as Fabric::run does.
#pragma once

#include "Comm.h"
#include "Common/Clock.h"
#include "Common/Error.h"
#include "Transport/Progress.h"
#include "Transport/ShmBoard.h"

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
                              std::to_string(peer) + " (" + what + ", " + algorithm + ")");
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

class BoardCall {
public:
  BoardCall(hetcclComm* c, const char* algorithm)
      : c_(c), algorithm_(algorithm), k_(++c->boardCalls), slot_(int(k_ & 1)),
        mine_(boardControl(c->segOfRank[c->rank]->board())) {
    failIfPeerReportedError(c);
    // Slot k%2 held call k-2: every peer must be done with it.
    if (k_ > 2)
      for (int r = 0; r < c->nranks; ++r) {
        if (r == c->rank) continue;
        BoardControl* ctl = control(r);
        waitOnBoard(
            c, r, [&] { return ctl->done.load(std::memory_order_acquire) >= k_ - 2; }, "reading call k-2", algorithm);
      }
  }

  uint64_t number() const { return k_; }
  int slot() const { return slot_; }
  BoardControl* control(int r) const { return boardControl(c_->segOfRank[r]->board()); }
  char* data(int r) const { return boardData(c_->segOfRank[r]->board(), c_->boardBytes, slot_); }

  // This rank's input is in data(rank): the peers may read it. `bytes` is
  // this call's, `totalBytes` the whole all-reduce's.
  void publish(uint64_t bytes, uint64_t totalBytes) {
    mine_->slot[slot_].bytes = bytes;
    mine_->slot[slot_].totalBytes = totalBytes;
    mine_->slot[slot_].seq.store(k_, std::memory_order_release);
  }

  // Waits for rank r's input of this call (this rank's is there already)
  // and fails, naming both byte counts, if it is not the same all-reduce.
  const char* input(int r, uint64_t bytes, uint64_t totalBytes) {
    const BoardSlot& s = r != c_->rank ? peerInput(r) : control(r)->slot[slot_];
    if (s.bytes != bytes || s.totalBytes != totalBytes)
      fail(hetcclInvalidUsage, "rank " + std::to_string(r) + " all-reduces " + std::to_string(s.totalBytes) +
                                   " bytes where this rank has " + std::to_string(totalBytes) +
                                   " (mismatched counts, types or collectives across ranks?)");
    return data(r);
  }

  // Waits for rank r's input of this call and returns its slot, whatever
  // it holds (all-to-all-v: each rank's blocks differ in size).
  const BoardSlot& peerInput(int r) {
    BoardSlot& s = control(r)->slot[slot_];
    waitOnBoard(
        c_, r, [&] { return s.seq.load(std::memory_order_acquire) == k_; }, "its input", algorithm_);
    return s;
  }

  // This rank has read call k: its slot k%2 may be reused by the peers.
  void finish() { mine_->done.store(k_, std::memory_order_release); }

private:
  hetcclComm* c_;
  const char* algorithm_;
  uint64_t k_;
  int slot_;
  BoardControl* mine_;
};

} // namespace hetccl
