#include "Auth/Hmac.h"

#include "Common/Error.h"
#include "Common/Log.h"
#include "Net/Frame.h"

#include <cstring>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace hetccl {

void randomBytes(void* buf, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(buf), int(n)) != 1)
    fail(hetcclSystemError, "OpenSSL RAND_bytes failed");
}

void hmacSha256(const void* key, size_t keyLen, const void* msg, size_t msgLen, unsigned char out[kMacBytes]) {
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key, int(keyLen), static_cast<const unsigned char*>(msg), msgLen, out, &len) ||
      len != kMacBytes)
    fail(hetcclSystemError, "OpenSSL HMAC failed");
}

static void mac(const std::string& token, const char* role, const unsigned char* a, const unsigned char* b,
                unsigned char out[kMacBytes]) {
  unsigned char msg[8 + 2 * kNonceBytes] = {};
  memcpy(msg, role, strlen(role));
  memcpy(msg + 8, a, kNonceBytes);
  memcpy(msg + 8 + kNonceBytes, b, kNonceBytes);
  hmacSha256(token.data(), token.size(), msg, sizeof msg, out);
}

void authServer(int fd, const std::string& token, const std::string& peerName, const Deadline& dl,
                const std::atomic<bool>* abortFlag) {
  unsigned char nonceS[kNonceBytes];
  randomBytes(nonceS, sizeof nonceS);
  sendFrame(fd, FrameType::Challenge, nonceS, sizeof nonceS, dl, abortFlag);
  std::vector<char> resp;
  try {
    resp = recvFrame(fd, FrameType::Response, kNonceBytes + kMacBytes, dl, abortFlag);
  } catch (const CclError& e) {
    logWarn("refused connection from %s: %s", peerName.c_str(), e.what());
    throw CclError(hetcclAuthError, std::string("connection from ") + peerName + " refused: " + e.what());
  }
  if (resp.size() != kNonceBytes + kMacBytes) {
    logWarn("refused connection from %s: malformed challenge response (%zu bytes)", peerName.c_str(), resp.size());
    fail(hetcclAuthError, "connection from " + peerName + " refused: malformed challenge response");
  }
  const unsigned char* nonceC = reinterpret_cast<const unsigned char*>(resp.data());
  unsigned char expect[kMacBytes];
  mac(token, "client", nonceS, nonceC, expect);
  if (CRYPTO_memcmp(expect, resp.data() + kNonceBytes, kMacBytes) != 0) {
    logWarn("refused connection from %s: wrong job token", peerName.c_str());
    try {
      sendFrame(fd, FrameType::Refused, nullptr, 0, dl, abortFlag);
    } catch (const CclError&) {
    }
    fail(hetcclAuthError, "connection from " + peerName + " refused: wrong job token");
  }
  unsigned char proof[kMacBytes];
  mac(token, "server", nonceC, nonceS, proof);
  sendFrame(fd, FrameType::ServerProof, proof, sizeof proof, dl, abortFlag);
}

void authClient(int fd, const std::string& token, const Deadline& dl, const std::atomic<bool>* abortFlag) {
  std::vector<char> ch = recvFrame(fd, FrameType::Challenge, kNonceBytes, dl, abortFlag);
  if (ch.size() != kNonceBytes) fail(hetcclRemoteError, "malformed challenge from server");
  const unsigned char* nonceS = reinterpret_cast<const unsigned char*>(ch.data());
  unsigned char resp[kNonceBytes + kMacBytes];
  randomBytes(resp, kNonceBytes);
  mac(token, "client", nonceS, resp, resp + kNonceBytes);
  sendFrame(fd, FrameType::Response, resp, sizeof resp, dl, abortFlag);
  std::vector<char> proof = recvFrame(fd, FrameType::ServerProof, kMacBytes, dl, abortFlag);
  unsigned char expect[kMacBytes];
  mac(token, "server", resp, nonceS, expect);
  if (proof.size() != kMacBytes || CRYPTO_memcmp(expect, proof.data(), kMacBytes) != 0)
    fail(hetcclAuthError, "server failed to prove the job token");
}

} // namespace hetccl
