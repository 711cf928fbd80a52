//===- ChannelAuth.cpp - the coordinator/agent handshake and sealed messages -===//
#include "het/Run/ChannelAuth.h"
#include "het/Run/JobToken.h"

#include <cstdlib>

namespace het::run {

std::string agentProof(const std::string &token, const std::string &coordinatorNonce,
                       const std::string &agentNonce, const std::string &group,
                       const std::string &host, int64_t freePort) {
  return hmacHex(token, "het-run agent\n" + coordinatorNonce + "\n" + agentNonce + "\n" + group +
                            "\n" + host + "\n" + std::to_string(freePort));
}

std::string sessionKey(const std::string &token, const std::string &coordinatorNonce,
                       const std::string &agentNonce) {
  return hmacHex(token, "het-run session\n" + coordinatorNonce + "\n" + agentNonce);
}

MessageSeal::MessageSeal(std::string key, bool coordinatorSide)
    : key_(std::move(key)), sendLabel_(coordinatorSide ? "to agent" : "to coordinator"),
      receiveLabel_(coordinatorSide ? "to coordinator" : "to agent") {}

std::string MessageSeal::seal(const std::string &json) {
  uint64_t seq = sent_++;
  std::string mac = hmacHex(key_, sendLabel_ + "\n" + std::to_string(seq) + "\n" + json);
  return mac + " " + std::to_string(seq) + " " + json;
}

bool MessageSeal::open(const std::string &line, std::string &json, std::string &error) {
  size_t a = line.find(' ');
  size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
  if (b == std::string::npos) {
    error = "a message without its seal (sent by a peer that does not know the job token?)";
    return false;
  }
  std::string mac = line.substr(0, a), seqText = line.substr(a + 1, b - a - 1);
  json = line.substr(b + 1);
  std::string want = hmacHex(key_, receiveLabel_ + "\n" + seqText + "\n" + json);
  if (!equalInConstantTime(want, mac)) {
    error = "a message whose seal does not match (forged, altered, or from a peer without the "
            "job token)";
    return false;
  }
  if (seqText != std::to_string(received_)) {
    error = "message " + seqText + " where " + std::to_string(received_) +
            " was due (replayed or reordered)";
    return false;
  }
  ++received_;
  return true;
}

} // namespace het::run
