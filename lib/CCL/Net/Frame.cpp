#include "Net/Frame.h"

#include "Common/Error.h"
#include "Net/Socket.h"

#include <cstring>

namespace hetccl {

namespace {
struct Header {
  uint32_t magic;
  uint32_t type;
  uint32_t len;
};
} // namespace

void sendFrame(int fd, FrameType type, const void* payload, uint32_t len, const Deadline& dl,
               const std::atomic<bool>* abortFlag) {
  Header h{kFrameMagic, uint32_t(type), len};
  std::vector<char> buf(sizeof h + len);
  memcpy(buf.data(), &h, sizeof h);
  if (len) memcpy(buf.data() + sizeof h, payload, len);
  sendAll(fd, buf.data(), buf.size(), dl, abortFlag);
}

std::vector<char> recvFrame(int fd, FrameType expect, uint32_t maxLen, const Deadline& dl,
                            const std::atomic<bool>* abortFlag) {
  Header h;
  recvAll(fd, &h, sizeof h, dl, abortFlag);
  if (h.magic != kFrameMagic)
    fail(hetcclRemoteError, "malformed message: bad magic 0x" + [&] {
      char b[16];
      snprintf(b, sizeof b, "%08x", h.magic);
      return std::string(b);
    }());
  if (h.type == uint32_t(FrameType::Refused) && expect != FrameType::Refused)
    fail(hetcclAuthError, "peer refused the connection (job token mismatch)");
  if (h.type != uint32_t(expect))
    fail(hetcclRemoteError, "malformed message: type " + std::to_string(h.type) + ", expected " +
                                std::to_string(uint32_t(expect)));
  if (h.len > maxLen)
    fail(hetcclRemoteError, "oversized message: " + std::to_string(h.len) + " bytes, limit " +
                                std::to_string(maxLen));
  std::vector<char> payload(h.len);
  if (h.len) recvAll(fd, payload.data(), h.len, dl, abortFlag);
  return payload;
}

} // namespace hetccl
