#include "Transport/Progress.h"

#include "Common/Clock.h"
#include "Common/Error.h"
#include "Fault/KillInSend.h"
#include "Transport/Shm.h"

#include <cstddef>

#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <sched.h>
#include <string>
#include <time.h>

namespace hetccl {

constexpr uint32_t kDataMagic = 0x48434454; // "HCDT"
// Bound one copy so a large send does not starve the receive running
// beside it in the same loop.
constexpr size_t kMaxSlice = 512 << 10;

// HETCCL_SHM_SLEEP=0 keeps idle ranks spinning/yielding instead of
// sleeping on the doorbell (lower latency when every rank has its own core).
static bool shmSleep() {
  static const bool on = [] {
    const char* v = getenv("HETCCL_SHM_SLEEP");
    return !(v && strcmp(v, "0") == 0);
  }();
  return on;
}

static size_t padOf(size_t n) { return (16 - n % 16) % 16; }

bool Fabric::advance(P2POp& op) {
  Link& l = *links[op.peer];
  bool moved = false;
  if (op.send) {
    if (op.phase == 0) {
      if (op.pos == 0) {
        uint32_t magic = kDataMagic, seq = sendSeq_[op.peer];
        uint64_t len = op.bytes;
        memcpy(op.hdr, &magic, 4);
        memcpy(op.hdr + 4, &seq, 4);
        memcpy(op.hdr + 8, &len, 8);
      }
      size_t w = l.trySend(op.hdr + op.pos, 16 - op.pos);
      op.pos += w;
      moved |= w > 0;
      if (op.pos < 16) return moved;
      op.phase = 1;
      op.pos = 0;
    }
    while (op.phase == 1 && op.pos < op.bytes) {
      size_t n = fault::allowedWrite(std::min(op.bytes - op.pos, kMaxSlice), op.pos, op.bytes);
      size_t w = l.trySend(op.buf + op.pos, n);
      if (w == 0) return moved;
      op.pos += w;
      fault::wrotePayload(op.pos, op.bytes, op.peer);
      moved = true;
      if (w < n) return moved;
    }
    if (op.phase == 1) {
      op.phase = 2;
      op.pos = 0;
    }
    static const char zeros[16] = {};
    size_t pad = padOf(op.bytes);
    if (op.pos < pad) {
      size_t w = l.trySend(zeros, pad - op.pos);
      op.pos += w;
      moved |= w > 0;
      if (op.pos < pad) return moved;
    }
    op.phase = 3;
    ++sendSeq_[op.peer];
    return true;
  }

  // Receive.
  if (op.phase == 0) {
    size_t r = l.tryRecv(op.hdr + op.pos, 16 - op.pos);
    op.pos += r;
    moved |= r > 0;
    if (op.pos < 16) return moved;
    uint32_t magic, seq;
    uint64_t len;
    memcpy(&magic, op.hdr, 4);
    memcpy(&seq, op.hdr + 4, 4);
    memcpy(&len, op.hdr + 8, 8);
    if (magic != kDataMagic)
      fail(hetcclRemoteError, "malformed data from rank " + std::to_string(op.peer) + " (bad frame magic)");
    if (seq != recvSeq_[op.peer])
      fail(hetcclRemoteError, "message " + std::to_string(seq) + " from rank " + std::to_string(op.peer) +
                                  " arrived where message " + std::to_string(recvSeq_[op.peer]) +
                                  " was expected (ranks called collectives in a different order?)");
    if (len != op.bytes)
      fail(hetcclInvalidUsage, "rank " + std::to_string(op.peer) + " sent " + std::to_string(len) +
                                   " bytes where this rank expects " + std::to_string(op.bytes) +
                                   " (mismatched counts, types or collectives across ranks?)");
    op.phase = 1;
    op.pos = 0;
  }
  while (op.phase == 1 && op.pos < op.bytes) {
    if (op.reduce) {
      size_t avail;
      const char* src = l.peek(&avail);
      size_t take = std::min(avail, op.bytes - op.pos);
      take -= take % op.elem;
      if (take == 0) return moved;
      op.reduce(op.buf + op.pos, src, take / op.elem);
      l.release(take);
      op.pos += take;
      moved = true;
    } else {
      size_t r = l.tryRecv(op.buf + op.pos, op.bytes - op.pos);
      if (r == 0) return moved;
      op.pos += r;
      moved = true;
    }
  }
  if (op.phase == 1) {
    op.phase = 2;
    op.pos = 0;
  }
  size_t pad = padOf(op.bytes);
  if (op.pos < pad) {
    char sink[16];
    size_t r = l.tryRecv(sink, pad - op.pos);
    op.pos += r;
    moved |= r > 0;
    if (op.pos < pad) return moved;
  }
  op.phase = 3;
  ++recvSeq_[op.peer];
  return true;
}

void Fabric::run(std::vector<P2POp>& ops) {
  if (ops.empty()) return;
  if (sendSeq_.size() != size_t(nranks)) {
    sendSeq_.assign(nranks, 0);
    recvSeq_.assign(nranks, 0);
  }
  for (const P2POp& op : ops) {
    if (op.peer < 0 || op.peer >= nranks || op.peer == rank || !links[op.peer])
      fail(hetcclInternalError, "no link to rank " + std::to_string(op.peer));
  }
  // Only the first pending op per (peer, direction) may progress, so that
  // messages on one link are matched in order.
  std::vector<char> busy(size_t(nranks) * 2);
  const Deadline dl = Deadline::afterMs(timeoutMs);
  size_t remaining = ops.size();
  uint64_t idle = 0;
  int64_t nextCheck = 0;
  std::vector<pollfd> pfds;
  // One pass: advance the first unfinished op of every link and direction.
  auto advanceAll = [&]() {
    bool moved = false;
    std::fill(busy.begin(), busy.end(), 0);
    for (P2POp& op : ops) {
      if (op.phase == 3) continue;
      char& b = busy[size_t(op.peer) * 2 + (op.send ? 1 : 0)];
      if (b) continue;
      b = 1;
      if (advance(op)) moved = true;
      if (op.phase == 3) {
        --remaining;
        b = 0; // the next op on this link may start in the next pass
      }
    }
    return moved;
  };
  while (remaining > 0) {
    bool progress = advanceAll();
    if (remaining == 0) break;
    if (progress) {
      idle = 0;
      continue;
    }
    ++idle;
    if (idle < 64) {
      cpuRelax();
      continue;
    }
    // Slow path: faults, then back off (yield, later sleep or poll).
    if (abortFlag && abortFlag->load(std::memory_order_relaxed)) fail(hetcclAborted, "communicator aborted");
    int64_t now = nowNs();
    if (now >= dl.atNs) {
      std::string what;
      for (const P2POp& op : ops)
        if (op.phase != 3) {
          what = std::string(op.send ? "send to" : "receive from") + " rank " + std::to_string(op.peer) + " (" +
                 std::to_string(op.bytes) + " bytes)";
          break;
        }
      fail(hetcclTimeout, "timed out after " + std::to_string(timeoutMs) + " ms waiting on " + what);
    }
    if (now >= nextCheck) {
      try {
        for (const P2POp& op : ops)
          if (op.phase != 3) links[op.peer]->checkPeer();
      } catch (const CclError&) {
        // A peer may have written its last bytes into our ring and exited
        // since the pass above found nothing: drain what it left before
        // calling it dead (else a peer that finished the collective and
        // exited looks like a crash).
        if (advanceAll()) {
          idle = 0;
          continue;
        }
        throw;
      }
      nextCheck = now + 5 * 1000000;
    }
    bool allSockets = true;
    std::atomic<uint32_t>* bell = nullptr; // set when every pending op is on shm
    bool allShm = true;
    pfds.clear();
    for (const P2POp& op : ops) {
      if (op.phase == 3) continue;
      int fd = links[op.peer]->pollFd();
      if (fd < 0) {
        allSockets = false;
        bell = links[op.peer]->doorbell();
      } else {
        allShm = false;
        pfds.push_back(pollfd{fd, short(op.send ? POLLOUT : POLLIN), 0});
      }
    }
    if (allSockets && !pfds.empty()) {
      ::poll(pfds.data(), pfds.size(), 5);
    } else if (allShm && bell && idle >= 128 && shmSleep()) {
      // Announce we sleep, look once more (a peer that rang before the
      // announcement left its data visible), then sleep until rung.
      ShmSegHeader* h = reinterpret_cast<ShmSegHeader*>(reinterpret_cast<char*>(bell) - offsetof(ShmSegHeader, doorbell));
      h->sleepers.fetch_add(1, std::memory_order_seq_cst);
      uint32_t seen = bell->load(std::memory_order_seq_cst);
      bool moved = advanceAll();
      if (!moved) doorbellWait(bell, seen, 1000);
      h->sleepers.fetch_sub(1, std::memory_order_seq_cst);
      if (moved) idle = 0;
    } else if (idle < 20000) {
      sched_yield();
    } else {
      timespec ts{0, 50000};
      nanosleep(&ts, nullptr);
    }
  }
}

void Fabric::poisonAll() {
  for (auto& l : links)
    if (l) l->poison();
}

uint64_t Fabric::bytesSent() const {
  uint64_t n = 0;
  for (const auto& l : links)
    if (l) n += l->bytesSent;
  return n;
}

} // namespace hetccl
