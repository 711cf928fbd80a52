// Lossy codecs for f32 gradients. A codec turns n floats into a byte string
// of a length fixed by n alone (so the receiver knows how much to expect)
// and back. The compressed all-reduce (CompressedAllReduce.cpp) re-encodes
// partial sums at every ring hop and the final sums once, so all ranks
// decode the same bytes and end with bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "het-c/hetccl.h"

namespace hetccl {

class Codec {
public:
  virtual ~Codec() = default;
  virtual size_t encodedBytes(size_t n) const = 0;
  virtual void encode(const float* src, size_t n, char* out) const = 0;
  virtual void decode(const char* in, size_t n, float* dst) const = 0;
  virtual void decodeAdd(const char* in, size_t n, float* acc) const = 0;
};

// Compression/Cast16.cpp: fp16 and bf16 casts (2 bytes per value).
std::unique_ptr<Codec> makeCast16Codec(bool bf16);
// Compression/Int8.cpp: int8 with one f32 scale per block of 256 values.
std::unique_ptr<Codec> makeInt8Codec();
constexpr size_t kInt8Block = 256;

} // namespace hetccl
