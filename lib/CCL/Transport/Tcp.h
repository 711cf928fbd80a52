// TCP transport for peers on other hosts (or on this host when
// HETCCL_TRANSPORT=tcp). Plain non-blocking sockets: the connection was
// authenticated with the job token when it was opened (Bootstrap), after
// which it carries the same framed byte stream as the shm rings. A closed or
// reset connection is a dead peer and fails at once.
#pragma once

#include "Net/Socket.h"
#include "Transport/Link.h"

#include <vector>

namespace hetccl {

class TcpLink : public Link {
public:
  TcpLink(int peer, Fd fd);
  size_t trySend(const void* p, size_t n) override;
  size_t tryRecv(void* p, size_t n) override;
  const char* peek(size_t* avail) override;
  void release(size_t n) override;
  int pollFd() const override { return fd_.get(); }
  void checkPeer() override {}
  void poison() override;
  const char* name() const override { return "tcp"; }

private:
  // Returns bytes read, 0 if none available; throws on EOF or error.
  size_t readSome(void* p, size_t n);
  int peer_;
  Fd fd_;
  // Staging buffer for peek(): reductions read whole elements from here.
  std::vector<char> stage_;
  size_t rd_ = 0, wr_ = 0;
};

} // namespace hetccl
