#include "Transport/Tcp.h"

#include "Common/Error.h"

#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace hetccl {

constexpr size_t kStageBytes = 1 << 20;

TcpLink::TcpLink(int peer, Fd fd) : peer_(peer), fd_(std::move(fd)), stage_(kStageBytes) {
  setNonBlocking(fd_.get(), true);
  setNoDelay(fd_.get());
  int buf = 4 << 20;
  setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

size_t TcpLink::trySend(const void* p, size_t n) {
  if (n == 0) return 0;
  ssize_t w = ::send(fd_.get(), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w > 0) {
    bytesSent += size_t(w);
    return size_t(w);
  }
  if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
  int e = errno;
  fail(hetcclSystemError, "send to rank " + std::to_string(peer_) + " failed (peer died or aborted?): " +
                              strerror(e));
}

size_t TcpLink::readSome(void* p, size_t n) {
  ssize_t r = ::recv(fd_.get(), p, n, MSG_DONTWAIT);
  if (r > 0) return size_t(r);
  if (r == 0)
    fail(hetcclSystemError, "rank " + std::to_string(peer_) + " closed the connection (process died or aborted)");
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  int e = errno;
  fail(hetcclSystemError, "receive from rank " + std::to_string(peer_) + " failed: " + strerror(e));
}

size_t TcpLink::tryRecv(void* p, size_t n) {
  if (n == 0) return 0;
  if (rd_ < wr_) { // drain what peek() staged first, to keep the stream in order
    size_t take = std::min(n, wr_ - rd_);
    memcpy(p, stage_.data() + rd_, take);
    rd_ += take;
    return take;
  }
  return readSome(p, n);
}

const char* TcpLink::peek(size_t* avail) {
  // Keep at least 16 bytes contiguous when possible so a whole element is
  // always visible: compact a short tail to the front, then top up.
  if (wr_ - rd_ < 16) {
    if (rd_ > 0) {
      memmove(stage_.data(), stage_.data() + rd_, wr_ - rd_);
      wr_ -= rd_;
      rd_ = 0;
    }
    wr_ += readSome(stage_.data() + wr_, stage_.size() - wr_);
  }
  *avail = wr_ - rd_;
  return stage_.data() + rd_;
}

void TcpLink::release(size_t n) {
  rd_ += n;
  if (rd_ == wr_) rd_ = wr_ = 0;
}

void TcpLink::poison() {
  // Shutting the socket down turns the peer's next read or write into an
  // immediate error.
  ::shutdown(fd_.get(), SHUT_RDWR);
}

} // namespace hetccl
