//===- AgentChannel.cpp - messages between a coordinator and its agents ---===//
#include "AgentChannel.h"

#include "het/Run/ChannelAuth.h"
#include "het/Run/JobToken.h"

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

nlohmann::json AgentChannel::offerChallenge(const std::string &token, double timeoutS,
                                            std::string &why) {
  const std::string nonce = het::run::randomHex(16);
  if (!send({{"challenge", {{"nonce", nonce}, {"protocol", het::run::kChannelProtocol}}}})) {
    why = "the peer closed the connection";
    return nullptr;
  }
  nlohmann::json hello;
  bool timedOut = false;
  if (!receive(hello, timeoutS, &timedOut) || !hello.contains("hello") ||
      !hello["hello"].is_object()) {
    why = timedOut ? "no hello within " + std::to_string(static_cast<int>(timeoutS)) + " s"
                   : "not an agent (no hello)";
    return nullptr;
  }
  nlohmann::json h = hello["hello"];
  auto text = [&](const char *key) {
    return h.contains(key) && h[key].is_string() ? h[key].get<std::string>() : std::string();
  };
  int64_t freePort = h.contains("free_port") && h["free_port"].is_number_integer()
                         ? h["free_port"].get<int64_t>()
                         : 0;
  if (!h.contains("protocol") || h["protocol"] != het::run::kChannelProtocol) {
    why = "an agent of another het-run version (handshake protocol " +
          (h.contains("protocol") ? h["protocol"].dump() : std::string("1")) + ", this one's " +
          std::to_string(het::run::kChannelProtocol) + ")";
    send({{"refused", why}});
    return nullptr;
  }
  std::string theirNonce = text("nonce");
  std::string want = het::run::agentProof(token, nonce, theirNonce, text("group"), text("host"),
                                          freePort);
  if (theirNonce.size() < 16 || !het::run::equalInConstantTime(want, text("proof"))) {
    why = "the agent could not prove the job token";
    send({{"refused", "this agent's job token is not this job's"}});
    return nullptr;
  }
  seal_ = std::make_unique<het::run::MessageSeal>(het::run::sessionKey(token, nonce, theirNonce),
                                                  /*coordinatorSide=*/true);
  return h;
}

nlohmann::json AgentChannel::answerChallenge(const std::string &token, nlohmann::json hello,
                                             double timeoutS) {
  nlohmann::json challenge;
  bool timedOut = false;
  if (!receive(challenge, timeoutS, &timedOut))
    throw std::runtime_error(timedOut ? "sent no challenge within " +
                                            std::to_string(static_cast<int>(timeoutS)) +
                                            " s (stalled, or not a het-run coordinator)"
                                      : "closed the connection before its challenge");
  if (challenge.contains("refused"))
    throw std::runtime_error("refused this agent: " + (challenge["refused"].is_string()
                                                           ? challenge["refused"].get<std::string>()
                                                           : challenge["refused"].dump()));
  if (!challenge.contains("challenge") || !challenge["challenge"].is_object() ||
      !challenge["challenge"].contains("nonce") || !challenge["challenge"]["nonce"].is_string())
    throw std::runtime_error("sent no challenge: not a het-run coordinator of this version (one "
                             "of before 2026-12-06 trusts any agent: upgrade it)");
  std::string theirNonce = challenge["challenge"]["nonce"].get<std::string>();
  std::string nonce = het::run::randomHex(16);
  hello["nonce"] = nonce;
  hello["protocol"] = het::run::kChannelProtocol;
  hello["proof"] = het::run::agentProof(token, theirNonce, nonce, hello.value("group", ""),
                                        hello.value("host", ""), hello.value("free_port", 0));
  if (!send({{"hello", hello}}))
    throw std::runtime_error("closed the connection");
  // Its answer: a refusal (plain), or the welcome sealed with the session
  // key, which only a holder of the token can make.
  std::string line;
  if (!receiveLine(line, timeoutS, &timedOut))
    throw std::runtime_error(timedOut ? "did not answer the hello within " +
                                            std::to_string(static_cast<int>(timeoutS)) +
                                            " s (stalled)"
                                      : "closed the connection after the hello");
  nlohmann::json plain = nlohmann::json::parse(line, nullptr, false);
  if (plain.is_object() && plain.contains("refused"))
    throw std::runtime_error("refused this agent: " +
                             (plain["refused"].is_string() ? plain["refused"].get<std::string>()
                                                           : plain["refused"].dump()));
  auto seal = std::make_unique<het::run::MessageSeal>(
      het::run::sessionKey(token, theirNonce, nonce), /*coordinatorSide=*/false);
  std::string json, why;
  if (!seal->open(line, json, why))
    throw std::runtime_error("could not prove it holds the job token (" + why +
                             "): not this job's coordinator; nothing it sends is run");
  nlohmann::json welcome = nlohmann::json::parse(json, nullptr, false);
  // Refused after the proof (no place in its group, no such group).
  if (welcome.is_object() && welcome.contains("refused"))
    throw std::runtime_error("refused this agent: " + (welcome["refused"].is_string()
                                                           ? welcome["refused"].get<std::string>()
                                                           : welcome["refused"].dump()));
  if (!welcome.is_object() || !welcome.contains("welcome"))
    throw std::runtime_error("sent a first message that is not a welcome");
  seal_ = std::move(seal);
  return welcome;
}

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
  std::string json = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(sendMutex_);
  std::string text = (seal_ ? seal_->seal(json) : json) + "\n" + bytes;
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

bool AgentChannel::receiveLine(std::string &line, double timeoutS, bool *timedOut) {
  if (timedOut)
    *timedOut = false;
  error_.clear();
  double until = timeoutS < 0 ? 0 : now() + timeoutS;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    if (buffer_.size() > (1u << 20)) {
      error_ = "a line of more than 1 MiB: not a peer of ours";
      return false;
    }
    int wait = -1;
    if (timeoutS >= 0) {
      double left = until - now();
      if (left <= 0) {
        if (timedOut)
          *timedOut = true;
        error_ = "nothing received for " + std::to_string(static_cast<int>(timeoutS)) + " s";
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

bool AgentChannel::receive(nlohmann::json &message, double timeoutS, bool *timedOut) {
  std::string line;
  if (!receiveLine(line, timeoutS, timedOut))
    return false;
  if (seal_) {
    std::string json;
    if (!seal_->open(line, json, error_))
      return false;
    line = std::move(json);
  }
  message = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object()) {
    error_ = "a line that is not a JSON object";
    return false;
  }
  return true;
}

bool AgentChannel::receiveBytes(size_t n, std::string &bytes, double timeoutS) {
  error_.clear();
  if (n > (size_t(4) << 30)) {
    error_ = "an announced size of more than 4 GiB";
    return false; // no executable is that large: not a peer of ours
  }
  bytes = buffer_.substr(0, std::min(n, buffer_.size()));
  buffer_.erase(0, bytes.size());
  while (bytes.size() < n) {
    // A stalled sender: no byte for timeoutS ends the transfer.
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, timeoutS < 0 ? -1 : static_cast<int>(timeoutS * 1000) + 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0) {
      error_ = "the transfer stalled: nothing for " + std::to_string(static_cast<int>(timeoutS)) + " s";
      return false;
    }
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
