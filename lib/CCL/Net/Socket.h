// Thin, deadline-aware wrappers over IPv4 TCP sockets. Every call that can
// block takes a Deadline and fails with hetcclTimeout when it passes, or
// with hetcclAborted when the abort flag is raised.
#pragma once

#include "Common/Clock.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hetccl {

struct SockAddr {
  std::string host; // dotted IPv4
  uint16_t port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

// Resolves "name" to a dotted IPv4 address (getaddrinfo); throws on failure.
std::string resolveIPv4(const std::string& name);
// Parses "host:port"; throws hetcclInvalidArgument naming the text.
SockAddr parseHostPort(const std::string& text);

// Owns a file descriptor.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

// Listens on addr (port 0 = any free port); `bound` receives the real port.
Fd listenOn(const SockAddr& addr, SockAddr* bound);
// Accepts one connection, or returns an empty Fd if the deadline passes.
Fd acceptUntil(int listenFd, const Deadline& dl, const std::atomic<bool>* abortFlag, std::string* peerName);
// Connects, retrying refused connections until the deadline (the peer may
// not be listening yet).
Fd connectRetry(const SockAddr& addr, const Deadline& dl, const std::atomic<bool>* abortFlag);

void setNonBlocking(int fd, bool on);
void setNoDelay(int fd);
// Blocking full send/recv with a deadline (socket may be non-blocking).
void sendAll(int fd, const void* buf, size_t n, const Deadline& dl, const std::atomic<bool>* abortFlag);
void recvAll(int fd, void* buf, size_t n, const Deadline& dl, const std::atomic<bool>* abortFlag);

} // namespace hetccl
