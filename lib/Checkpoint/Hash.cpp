//===- Hash.cpp - SHA-256 content hashes ----------------------------------===//
#include "het/Checkpoint/Hash.h"
#include "het/Checkpoint/Snapshot.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <vector>

namespace het::ckpt {

namespace {
std::string hex(const unsigned char *md, unsigned len) {
  static const char *digits = "0123456789abcdef";
  std::string s(2 * len, '0');
  for (unsigned i = 0; i < len; ++i) {
    s[2 * i] = digits[md[i] >> 4];
    s[2 * i + 1] = digits[md[i] & 15];
  }
  return s;
}

struct Ctx {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  Ctx() {
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), nullptr) != 1)
      throw CheckpointError("OpenSSL SHA-256 is unavailable");
  }
  ~Ctx() { EVP_MD_CTX_free(c); }
  void update(const void *p, size_t n) { EVP_DigestUpdate(c, p, n); }
  std::string finish() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_DigestFinal_ex(c, md, &len);
    return hex(md, len);
  }
};
} // namespace

Sha256::Sha256() : ctx_(new Ctx) {}
Sha256::~Sha256() { delete static_cast<Ctx *>(ctx_); }
void Sha256::update(const void *data, size_t n) { static_cast<Ctx *>(ctx_)->update(data, n); }
std::string Sha256::hex() { return static_cast<Ctx *>(ctx_)->finish(); }

std::string sha256Hex(const void *data, size_t n) {
  Ctx ctx;
  ctx.update(data, n);
  return ctx.finish();
}

std::string sha256File(const std::string &path, uint64_t *size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError("cannot open " + path + ": " + std::strerror(errno));
  Ctx ctx;
  std::vector<unsigned char> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      ::close(fd);
      throw CheckpointError("cannot read " + path + ": " + std::strerror(e));
    }
    if (r == 0) break;
    ctx.update(buf.data(), size_t(r));
    total += uint64_t(r);
  }
  ::close(fd);
  if (size) *size = total;
  return ctx.finish();
}

} // namespace het::ckpt
