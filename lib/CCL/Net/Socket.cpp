#include "Net/Socket.h"

#include "Common/Error.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hetccl {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string resolveIPv4(const std::string& name) {
  in_addr a;
  if (inet_pton(AF_INET, name.c_str(), &a) == 1) return name;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(name.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) fail(hetcclInvalidArgument, "cannot resolve host '" + name + "': " + gai_strerror(rc));
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
  freeaddrinfo(res);
  return buf;
}

SockAddr parseHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    fail(hetcclInvalidArgument, "expected host:port, got '" + text + "'");
  std::string portText = text.substr(colon + 1);
  char* end = nullptr;
  long port = strtol(portText.c_str(), &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535)
    fail(hetcclInvalidArgument, "bad port '" + portText + "' in '" + text + "'");
  SockAddr a;
  a.host = resolveIPv4(text.substr(0, colon));
  a.port = uint16_t(port);
  return a;
}

static sockaddr_in toSockaddr(const SockAddr& a) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(a.port);
  if (inet_pton(AF_INET, a.host.c_str(), &sa.sin_addr) != 1)
    fail(hetcclInvalidArgument, "not an IPv4 address: '" + a.host + "'");
  return sa;
}

Fd listenOn(const SockAddr& addr, SockAddr* bound) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) failErrno("socket");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa = toSockaddr(addr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) failErrno("bind " + addr.str());
  if (::listen(fd.get(), 128) != 0) failErrno("listen " + addr.str());
  if (bound) {
    socklen_t len = sizeof sa;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
    bound->host = addr.host;
    bound->port = ntohs(sa.sin_port);
  }
  return fd;
}

static void checkAbort(const std::atomic<bool>* abortFlag) {
  if (abortFlag && abortFlag->load(std::memory_order_relaxed)) fail(hetcclAborted, "communicator aborted");
}

// Waits for `events` on fd in slices of at most 100 ms so that an abort is
// noticed promptly. Returns false when the deadline passes.
static bool waitFd(int fd, short events, const Deadline& dl, const std::atomic<bool>* abortFlag) {
  for (;;) {
    checkAbort(abortFlag);
    int left = dl.msLeft();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, left < 100 ? left : 100);
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) failErrno("poll");
  }
}

Fd acceptUntil(int listenFd, const Deadline& dl, const std::atomic<bool>* abortFlag, std::string* peerName) {
  if (!waitFd(listenFd, POLLIN, dl, abortFlag)) return Fd();
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  Fd fd(::accept4(listenFd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_CLOEXEC));
  if (!fd) {
    if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) return Fd();
    failErrno("accept");
  }
  if (peerName) {
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, buf, sizeof buf);
    *peerName = std::string(buf) + ":" + std::to_string(ntohs(sa.sin_port));
  }
  return fd;
}

// Whether a connected socket's two ends are the same address and port.
static bool connectedToItself(int fd) {
  sockaddr_in local{}, peer{};
  socklen_t localLen = sizeof local, peerLen = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localLen) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0)
    return false;
  return local.sin_family == AF_INET && peer.sin_family == AF_INET &&
         local.sin_port == peer.sin_port && local.sin_addr.s_addr == peer.sin_addr.s_addr;
}

Fd connectRetry(const SockAddr& addr, const Deadline& dl, const std::atomic<bool>* abortFlag) {
  sockaddr_in sa = toSockaddr(addr);
  int delayMs = 1;
  for (;;) {
    checkAbort(abortFlag);
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) failErrno("socket");
    int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    if (rc != 0 && errno == EINPROGRESS) {
      if (waitFd(fd.get(), POLLOUT, dl, abortFlag)) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0 && connectedToItself(fd.get())) {
      // TCP's simultaneous open: with nobody listening yet on a local port
      // in the ephemeral range, the kernel may give this socket that very
      // port as its source, and it connects to itself. It then holds the
      // port the root is about to listen on (its bind fails: "Address
      // already in use"). Drop it and try again, as for a refusal.
      fd = Fd();
      rc = -1;
      errno = ECONNREFUSED;
    }
    if (rc == 0) {
      setNonBlocking(fd.get(), false);
      return fd;
    }
    int e = errno;
    if (dl.passed())
      fail(hetcclTimeout, "could not connect to " + addr.str() + " before the timeout: " + strerror(e));
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != ENETUNREACH && e != EHOSTUNREACH && e != ECONNRESET)
      fail(hetcclSystemError, "connect to " + addr.str() + ": " + strerror(e));
    usleep(useconds_t(delayMs) * 1000);
    if (delayMs < 100) delayMs *= 2;
  }
}

void setNonBlocking(int fd, bool on) {
  int fl = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void sendAll(int fd, const void* buf, size_t n, const Deadline& dl, const std::atomic<bool>* abortFlag) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= size_t(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) failErrno("send");
    if (!waitFd(fd, POLLOUT, dl, abortFlag)) fail(hetcclTimeout, "send timed out");
  }
}

void recvAll(int fd, void* buf, size_t n, const Deadline& dl, const std::atomic<bool>* abortFlag) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= size_t(r);
      continue;
    }
    if (r == 0) fail(hetcclSystemError, "connection closed by peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) failErrno("recv");
    if (!waitFd(fd, POLLIN, dl, abortFlag)) fail(hetcclTimeout, "receive timed out");
  }
}

} // namespace hetccl
