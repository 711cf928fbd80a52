// int8 with per-block scales: each block of 256 values is sent as one f32
// scale (max |x| / 127) and 256 signed bytes, 260 bytes for 1024: 25.4% of
// f32. Rounding to nearest bounds the error of one encoding by scale/2 =
// max|x_block| / 254 per value; the all-reduce encodes p-1 partial sums and
// the final sum once, so the error of the result is at most the sum of those
// bounds (docs/hetccl.md). Non-finite inputs make the block's scale
// non-finite and the block decodes to NaN: errors are never silent.
#include "Compression/Codec.h"

#include <cmath>
#include <cstring>

namespace hetccl {

namespace {
class Int8 : public Codec {
public:
  size_t encodedBytes(size_t n) const override { return blocks(n) * 4 + n; }
  void encode(const float* src, size_t n, char* out) const override {
    size_t nb = blocks(n);
    float* scales = reinterpret_cast<float*>(out);
    int8_t* q = reinterpret_cast<int8_t*>(out + nb * 4);
    for (size_t b = 0; b < nb; ++b) {
      size_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      float mx = 0;
      for (size_t i = lo; i < hi; ++i) mx = std::max(mx, std::fabs(src[i]));
      if (!std::isfinite(mx)) mx = NAN;
      for (size_t i = lo; i < hi; ++i) {
        if (std::isnan(src[i])) mx = NAN;
      }
      float scale = mx / 127.0f;
      float inv = scale > 0 ? 1.0f / scale : 0.0f;
      memcpy(&scales[b], &scale, 4);
      for (size_t i = lo; i < hi; ++i) {
        float v = std::nearbyint(src[i] * inv);
        if (!(v >= -127.0f)) v = -127.0f; // also maps NaN (the scale carries it)
        if (v > 127.0f) v = 127.0f;
        q[i] = int8_t(v);
      }
    }
  }
  void decode(const char* in, size_t n, float* dst) const override {
    for (size_t i = 0; i < n; ++i) dst[i] = 0;
    decodeAdd(in, n, dst);
  }
  void decodeAdd(const char* in, size_t n, float* acc) const override {
    size_t nb = blocks(n);
    const int8_t* q = reinterpret_cast<const int8_t*>(in + nb * 4);
    for (size_t b = 0; b < nb; ++b) {
      float scale;
      memcpy(&scale, in + b * 4, 4);
      size_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
      for (size_t i = lo; i < hi; ++i) acc[i] += float(q[i]) * scale;
    }
  }

private:
  static size_t blocks(size_t n) { return (n + kInt8Block - 1) / kInt8Block; }
};
} // namespace

std::unique_ptr<Codec> makeInt8Codec() { return std::make_unique<Int8>(); }

} // namespace hetccl
