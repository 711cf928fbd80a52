//===- Hash.h - SHA-256 content hashes ------------------------*- C++ -*-===//
//
// One hash serves twice: it detects which tensors changed since the last full
// checkpoint (incremental saves) and it is the checksum that resume verifies.
// SHA-256 (OpenSSL libcrypto, already a dependency of hetccl) rather than
// CRC32C because a content hash must not collide for "changed" detection.
//
#ifndef HET_CHECKPOINT_HASH_H
#define HET_CHECKPOINT_HASH_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace het::ckpt {

/// Incremental SHA-256 (for a file written in pieces).
class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256 &) = delete;
  Sha256 &operator=(const Sha256 &) = delete;
  void update(const void *data, size_t n);
  std::string hex(); // finishes; call once
private:
  void *ctx_;
};

/// Lower-case hex SHA-256 of `n` bytes.
std::string sha256Hex(const void *data, size_t n);
/// Lower-case hex SHA-256 of a whole file; throws CheckpointError if it
/// cannot be read.
std::string sha256File(const std::string &path, uint64_t *size = nullptr);

} // namespace het::ckpt

#endif
