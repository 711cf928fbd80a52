// Job-token authentication. Both ends of every connection (bootstrap and
// data) prove they hold the job token without sending it: the server sends a
// random nonce, the client answers HMAC-SHA256(token, "client" | nonceS |
// nonceC) and its own nonce, and the server answers HMAC-SHA256(token,
// "server" | nonceC | nonceS). Fresh nonces on both sides defeat replay; the
// comparison is constant time. HMAC comes from OpenSSL (libcrypto) rather
// than a home-made implementation.
#pragma once

#include "Common/Clock.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace hetccl {

constexpr size_t kTokenBytes = 32;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;

void randomBytes(void* buf, size_t n);
void hmacSha256(const void* key, size_t keyLen, const void* msg, size_t msgLen, unsigned char out[kMacBytes]);

// Run the challenge on an accepted connection. On a bad proof it logs the
// refusal (with peerName), tells the peer, and throws hetcclAuthError.
void authServer(int fd, const std::string& token, const std::string& peerName, const Deadline& dl,
                const std::atomic<bool>* abortFlag);
// Answer the challenge on a connection we opened; throws hetcclAuthError if
// the server is refused or cannot prove the token itself.
void authClient(int fd, const std::string& token, const Deadline& dl, const std::atomic<bool>* abortFlag);

} // namespace hetccl
