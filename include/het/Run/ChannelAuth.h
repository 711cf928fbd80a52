//===- ChannelAuth.h - a coordinator and its agents prove the job token --===//
//
// het-run --coordinate and each het-run --join agent talk over one TCP
// connection. Before anything else both prove they hold the job token,
// without sending it:
//
//   coordinator -> agent   {"challenge": {"nonce": nC, "protocol": 2}}
//   agent -> coordinator   {"hello": {group, host, free_port, "nonce": nA,
//                           "proof": HMAC(token, "het-run agent" nC nA group host port)}}
//   coordinator -> agent   the first sealed message (below): {"welcome": ...}
//
// A coordinator that cannot check the proof refuses the agent; an agent
// whose first sealed message does not open refuses the coordinator (an
// impostor does not know the token, so cannot derive the session key).
// Every later message is sealed with the session key
// HMAC(token, "het-run session" nC nA): one line "<mac> <seq> <json>",
// the mac over the direction, the sequence number and the text, so a
// message cannot be forged, altered, replayed, reordered or reflected. An
// executable's bytes follow the sealed message that announces them with
// their SHA-256, which the agent checks before it writes the file.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_CHANNELAUTH_H
#define HET_RUN_CHANNELAUTH_H

#include <cstdint>
#include <string>

namespace het::run {

/// The handshake's protocol number (a coordinator and agents of another
/// version refuse each other by it, with a message).
inline constexpr int kChannelProtocol = 2;

/// What an agent's hello proves: the token, both nonces and its fields.
std::string agentProof(const std::string &token, const std::string &coordinatorNonce,
                       const std::string &agentNonce, const std::string &group,
                       const std::string &host, int64_t freePort);
/// The key both ends seal messages with after the handshake.
std::string sessionKey(const std::string &token, const std::string &coordinatorNonce,
                       const std::string &agentNonce);

/// Seals and opens the messages of one side of a channel. Not
/// thread-safe: seal under the sender's lock, open on the one reader.
class MessageSeal {
public:
  MessageSeal(std::string key, bool coordinatorSide);
  /// The line that carries `json` (no newline).
  std::string seal(const std::string &json);
  /// The text of a sealed `line`; false with `error` set when its mac does
  /// not match or its sequence number is not the next one.
  bool open(const std::string &line, std::string &json, std::string &error);

private:
  std::string key_, sendLabel_, receiveLabel_;
  uint64_t sent_ = 0, received_ = 0;
};

} // namespace het::run

#endif
