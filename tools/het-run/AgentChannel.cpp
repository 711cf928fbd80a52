//===- AgentChannel.cpp - messages between a coordinator and its agents ---===//
#include "AgentChannel.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace hetrun {

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::pair<std::string, std::string> split(const std::string &address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    throw std::runtime_error("expected HOST:PORT, got '" + address + "'");
  return {address.substr(0, colon), address.substr(colon + 1)};
}
} // namespace

AgentChannel::AgentChannel(int fd) : fd_(fd) {
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // A peer frozen or cut off without a FIN must still end the connection:
  // keepalive probes after 10 s of silence, every 5 s, 3 unanswered = gone;
  // and no send blocks longer than a minute.
  int idle = 10, interval = 5, count = 3;
  ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  timeval limit{60, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

AgentChannel::~AgentChannel() { ::close(fd_); }

std::unique_ptr<AgentChannel> AgentChannel::connect(const std::string &address, double timeoutS) {
  auto [host, port] = split(address);
  double until = now() + timeoutS;
  std::string last;
  for (;;) {
    addrinfo hints{}, *found = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (rc != 0) {
      last = std::string("cannot resolve ") + host + ": " + ::gai_strerror(rc);
    } else {
      for (addrinfo *a = found; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
          continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(found);
          return std::make_unique<AgentChannel>(fd);
        }
        last = std::string(std::strerror(errno));
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    if (now() >= until)
      throw std::runtime_error("cannot reach the coordinator at " + address + " (" + last + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

bool AgentChannel::send(const nlohmann::json &message, const std::string &bytes) {
  // Invalid UTF-8 (a rank's label) is replaced, not thrown.
  std::string text =
      message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" + bytes;
  std::lock_guard<std::mutex> lock(sendMutex_);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool AgentChannel::receive(nlohmann::json &message, double timeoutS, bool *timedOut) {
  if (timedOut)
    *timedOut = false;
  double until = timeoutS < 0 ? 0 : now() + timeoutS;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      message = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      return message.is_object();
    }
    if (buffer_.size() > (1u << 20))
      return false; // no message is that long: not a peer of ours
    int wait = -1;
    if (timeoutS >= 0) {
      double left = until - now();
      if (left <= 0) {
        if (timedOut)
          *timedOut = true;
        return false;
      }
      wait = static_cast<int>(left * 1000) + 1;
    }
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, wait);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0)
      continue; // the deadline is checked above
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

bool AgentChannel::receiveBytes(size_t n, std::string &bytes) {
  if (n > (size_t(4) << 30))
    return false; // no executable is that large: not a peer of ours
  bytes = buffer_.substr(0, std::min(n, buffer_.size()));
  buffer_.erase(0, bytes.size());
  while (bytes.size() < n) {
    char chunk[65536];
    ssize_t got = ::recv(fd_, chunk, std::min(sizeof chunk, n - bytes.size()), 0);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    bytes.append(chunk, static_cast<size_t>(got));
  }
  return true;
}

void AgentChannel::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

/// The numeric host of one end of `fd` (getpeername or getsockname); "" if
/// it cannot be had.
static std::string numericHost(int fd, int (*end)(int, sockaddr *, socklen_t *)) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (end(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
    return "";
  char host[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<sockaddr *>(&a), len, host, sizeof host, nullptr, 0,
                    NI_NUMERICHOST) != 0)
    return "";
  return host;
}

std::string AgentChannel::peerAddress() const { return numericHost(fd_, ::getpeername); }

std::string AgentChannel::localAddress() const { return numericHost(fd_, ::getsockname); }

AgentListener::AgentListener(const std::string &address, int port) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(address.empty() ? nullptr : address.c_str(), service.c_str(), &hints, &found);
  if (rc != 0)
    throw std::runtime_error("cannot listen for agents on " + address + ": " + ::gai_strerror(rc));
  std::string last = "no address";
  for (addrinfo *a = found; a && fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      fd_ = fd;
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &len);
      port_ = ntohs(bound.ss_family == AF_INET6
                        ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                        : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
    } else {
      last = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0)
    throw std::runtime_error("cannot listen for agents on " + address + ":" + service + " (" +
                             last + ")");
}

AgentListener::~AgentListener() { close(); }

void AgentListener::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

std::unique_ptr<AgentChannel> AgentListener::accept(double timeoutS) {
  if (fd_ < 0)
    return nullptr;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeoutS * 1000)) <= 0)
    return nullptr;
  int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0)
    return nullptr;
  return std::make_unique<AgentChannel>(fd);
}

} // namespace hetrun
