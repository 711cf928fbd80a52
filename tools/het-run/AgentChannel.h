//===- AgentChannel.h - messages between a coordinator and its agents -*- C++ -*-===//
//
// het-run --elastic --coordinate and its het-run --join agents talk over one
// TCP connection per agent: one JSON object per line, and a message may be
// followed by raw bytes it announces (an executable the agent lacks, with
// its SHA-256). Both ends first prove they hold the job token
// (offerChallenge/answerChallenge: het/Run/ChannelAuth.h); after that every
// line is sealed with the session key, and a line that does not open ends
// the channel. Sending is thread-safe; one thread receives. Every read has
// a timeout: a peer that stalls is a peer gone.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_AGENTCHANNEL_H
#define HET_RUN_AGENTCHANNEL_H

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <string>

namespace het::run {
class MessageSeal;
}

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

  /// The coordinator's side of the handshake: challenges the peer, checks
  /// the proof in its hello and, when it holds `token`, seals the channel
  /// and returns the hello's fields. Otherwise tells the peer why it is
  /// refused and returns null with `why` set. Waits at most `timeoutS` for
  /// the hello.
  nlohmann::json offerChallenge(const std::string &token, double timeoutS, std::string &why);
  /// The agent's side: answers the challenge with `hello` (group, host,
  /// free_port) and the proof, then opens the coordinator's first sealed
  /// message (its welcome, returned). Throws std::runtime_error saying
  /// what the coordinator did: "refused this agent: ...", "could not prove
  /// it holds the job token ..." (an impostor), "sent no challenge ..."
  /// (another protocol, or stalled past `timeoutS`), ...
  nlohmann::json answerChallenge(const std::string &token, nlohmann::json hello, double timeoutS);

  /// Sends `message` (and `bytes` right after it, if any). Returns false
  /// when the peer is gone.
  bool send(const nlohmann::json &message, const std::string &bytes = "");
  /// The next message; false when the peer closed the connection, it
  /// failed, or a line is not JSON or does not open (error() says which).
  /// `timeoutS` < 0: wait as long as it takes; on a timeout returns false
  /// with `*timedOut` set.
  bool receive(nlohmann::json &message, double timeoutS = -1, bool *timedOut = nullptr);
  /// The `n` raw bytes that follow a message; false when the peer is gone
  /// or sends nothing for `timeoutS`.
  bool receiveBytes(size_t n, std::string &bytes, double timeoutS);
  /// Why the last receive failed ("" when the peer just closed).
  const std::string &error() const { return error_; }
  /// Wakes a receive() blocked in another thread (it returns false).
  void shutdown();
  /// The peer's IP address, as a string.
  std::string peerAddress() const;
  /// This end's numeric address (the one the coordinator sees as ours).
  std::string localAddress() const;

private:
  /// The next line (without its newline), or false on a close, an error or
  /// after `timeoutS` (< 0: no limit).
  bool receiveLine(std::string &line, double timeoutS, bool *timedOut);

  int fd_;
  std::mutex sendMutex_;
  std::string buffer_; // received, not yet returned
  std::string error_;
  std::unique_ptr<het::run::MessageSeal> seal_; // after the handshake
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
