//===- AgentChannel.h - messages between a coordinator and its agents -*- C++ -*-===//
//
// het-run --elastic --coordinate and its het-run --join agents talk over one
// TCP connection per agent: one JSON object per line, and a message may be
// followed by raw bytes it announces (an executable the agent lacks).
// Sending is thread-safe; one thread receives.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_AGENTCHANNEL_H
#define HET_RUN_AGENTCHANNEL_H

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <string>

namespace hetrun {

class AgentChannel {
public:
  /// Takes ownership of a connected socket.
  explicit AgentChannel(int fd);
  ~AgentChannel();
  AgentChannel(const AgentChannel &) = delete;
  AgentChannel &operator=(const AgentChannel &) = delete;

  /// Connects to HOST:PORT, retrying until `timeoutS` has passed (the
  /// coordinator may start after its agents); throws std::runtime_error.
  static std::unique_ptr<AgentChannel> connect(const std::string &address, double timeoutS);

  /// Sends `message` (and `bytes` right after it, if any). Returns false
  /// when the peer is gone.
  bool send(const nlohmann::json &message, const std::string &bytes = "");
  /// The next message; false when the peer closed the connection, it
  /// failed, or a line is not JSON. `timeoutS` < 0: wait as long as it takes;
  /// on a timeout returns false with `*timedOut` set.
  bool receive(nlohmann::json &message, double timeoutS = -1, bool *timedOut = nullptr);
  /// The `n` raw bytes that follow a message; false when the peer is gone.
  bool receiveBytes(size_t n, std::string &bytes);
  /// Wakes a receive() blocked in another thread (it returns false).
  void shutdown();
  /// The peer's IP address, as a string.
  std::string peerAddress() const;
  /// This end's numeric address (the one the coordinator sees as ours).
  std::string localAddress() const;

private:
  int fd_;
  std::mutex sendMutex_;
  std::string buffer_; // received, not yet returned
};

/// A TCP listener on address:port (port 0: a free one).
class AgentListener {
public:
  AgentListener(const std::string &address, int port); // throws std::runtime_error
  ~AgentListener();
  int port() const { return port_; }
  /// The next connection, or null after `timeoutS` or close().
  std::unique_ptr<AgentChannel> accept(double timeoutS);
  void close();

private:
  int fd_ = -1, port_ = 0;
};

} // namespace hetrun

#endif
