// A Link is one duplex byte stream between this rank and one peer. Links are
// non-blocking: every call moves what it can and returns at once, so one
// progress loop (Transport/Progress) can drive many links at the same time
// and no send/receive pattern can deadlock on a full buffer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace hetccl {

class Link {
public:
  virtual ~Link() = default;
  // Copies up to n bytes into the link; returns how many (0 when full).
  virtual size_t trySend(const void* p, size_t n) = 0;
  // Copies up to n received bytes out; returns how many (0 when none).
  virtual size_t tryRecv(void* p, size_t n) = 0;
  // Zero-copy receive: returns the contiguous readable bytes (maybe none),
  // so a reduction can read straight out of the transport; release(n)
  // consumes them. The span always ends on a 16-byte boundary of the stream
  // or at the end of what has arrived.
  virtual const char* peek(size_t* avail) = 0;
  virtual void release(size_t n) = 0;
  // A socket to poll(), or -1 for memory links.
  virtual int pollFd() const { return -1; }
  // Throws if the peer is known to be gone (process exited, link closed).
  virtual void checkPeer() = 0;
  // Best effort: make the peer's waits fail fast because we are failing.
  virtual void poison() = 0;
  virtual const char* name() const = 0;
  // The futex word this rank sleeps on while waiting for this link (shm),
  // or nullptr (sockets are waited on with poll()).
  virtual std::atomic<uint32_t>* doorbell() { return nullptr; }

  uint64_t bytesSent = 0; // every byte written into the transport
};

} // namespace hetccl
