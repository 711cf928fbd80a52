// The progress engine. A collective step is a list of point-to-point
// operations (send n bytes to peer, receive n bytes from peer, optionally
// reducing them into the destination as they arrive); run() drives all of
// them at once until every one is complete, so a ring step's send and
// receive overlap and no pattern deadlocks.
//
// Each message on a link is framed by a 16-byte header {magic, sequence,
// length} and padded to 16 bytes. The receiver checks the header against
// what it expects, so ranks that call collectives with different sizes or
// in a different order get a clear error instead of corrupt data.
//
// run() is where faults surface: it ends with hetcclTimeout when the
// deadline passes, hetcclAborted when the abort flag rises, and an error
// when a peer dies or another rank reports failure.
#pragma once

#include "Transport/Link.h"
#include "Types/DataType.h"

#include <atomic>
#include <memory>
#include <vector>

namespace hetccl {

// One spin of a busy wait: tells the core we are spinning (x86 PAUSE).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct P2POp {
  int peer = -1;
  bool send = false;
  char* buf = nullptr; // source (send) or destination (recv)
  size_t bytes = 0;
  ReduceFn reduce = nullptr; // recv only: buf[i] = buf[i] op incoming[i]
  size_t elem = 1;           // element size for reduce

  // Progress state (owned by the engine).
  int phase = 0;
  size_t pos = 0;
  unsigned char hdr[16] = {};

  static P2POp sendTo(int peer, const void* buf, size_t bytes) {
    P2POp o;
    o.peer = peer;
    o.send = true;
    o.buf = const_cast<char*>(static_cast<const char*>(buf));
    o.bytes = bytes;
    return o;
  }
  static P2POp recvFrom(int peer, void* buf, size_t bytes) {
    P2POp o;
    o.peer = peer;
    o.buf = static_cast<char*>(buf);
    o.bytes = bytes;
    return o;
  }
  static P2POp recvReduce(int peer, void* buf, size_t bytes, ReduceFn fn, size_t elem) {
    P2POp o = recvFrom(peer, buf, bytes);
    o.reduce = fn;
    o.elem = elem;
    return o;
  }
};

class Fabric {
public:
  int rank = 0;
  int nranks = 1;
  std::vector<std::unique_ptr<Link>> links; // links[rank] is empty
  const std::atomic<bool>* abortFlag = nullptr;
  int64_t timeoutMs = 300000;

  // Runs ops to completion (ops to the same peer in the same direction run
  // in list order). Throws CclError on timeout, abort, dead peer, bad data.
  void run(std::vector<P2POp>& ops);
  void run(std::vector<P2POp>&& ops) { run(ops); }
  // Tells every peer we are failing (best effort, never throws).
  void poisonAll();
  uint64_t bytesSent() const;

private:
  bool advance(P2POp& op);
  std::vector<uint32_t> sendSeq_, recvSeq_;
};

} // namespace hetccl
