// Framed control messages (bootstrap and handshakes). A frame is a 12-byte
// header {magic, type, length} and a payload. The receiver names the type it
// expects and the largest payload it accepts; anything else (wrong magic,
// wrong type, oversized length, short read) is rejected with an error before
// a byte of payload is trusted or memory is allocated for it.
#pragma once

#include "Common/Clock.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace hetccl {

enum class FrameType : uint32_t {
  Challenge = 1,   // server -> client: nonce
  Response = 2,    // client -> server: client nonce + HMAC
  ServerProof = 3, // server -> client: HMAC over the client nonce
  Hello = 4,       // client -> root: rank info
  Table = 5,       // root -> all: every rank's info
  Blob = 6,        // bootstrap all-gather contribution
  BlobAll = 7,     // bootstrap all-gather result
  DataHello = 8,   // data connection: which rank is calling
  Refused = 9,     // server -> client: authentication failed
};

constexpr uint32_t kFrameMagic = 0x48434331; // "HCC1"

void sendFrame(int fd, FrameType type, const void* payload, uint32_t len, const Deadline& dl,
               const std::atomic<bool>* abortFlag);
// Receives one frame of type `expect` with at most maxLen payload bytes.
std::vector<char> recvFrame(int fd, FrameType expect, uint32_t maxLen, const Deadline& dl,
                            const std::atomic<bool>* abortFlag);

} // namespace hetccl
