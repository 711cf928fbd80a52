// fp16 / bf16 casting: half the bytes of f32. fp16 keeps 11 significant
// bits but overflows above 65504 (values saturate to inf, which then poison
// the sum: users with large gradients should prefer bf16, which has f32's
// range and 8 significant bits). Each value is rounded to nearest even.
#include "Compression/Codec.h"
#include "Types/DataType.h"

#include <cstring>

namespace hetccl {

namespace {
class Cast16 : public Codec {
public:
  explicit Cast16(bool bf16) : bf16_(bf16) {}
  size_t encodedBytes(size_t n) const override { return n * 2; }
  void encode(const float* src, size_t n, char* out) const override {
    uint16_t* o = reinterpret_cast<uint16_t*>(out);
    for (size_t i = 0; i < n; ++i) o[i] = bf16_ ? floatToBf16(src[i]) : floatToHalf(src[i]);
  }
  void decode(const char* in, size_t n, float* dst) const override {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(in);
    for (size_t i = 0; i < n; ++i) dst[i] = bf16_ ? bf16ToFloat(p[i]) : halfToFloat(p[i]);
  }
  void decodeAdd(const char* in, size_t n, float* acc) const override {
    const uint16_t* p = reinterpret_cast<const uint16_t*>(in);
    for (size_t i = 0; i < n; ++i) acc[i] += bf16_ ? bf16ToFloat(p[i]) : halfToFloat(p[i]);
  }

private:
  bool bf16_;
};
} // namespace

std::unique_ptr<Codec> makeCast16Codec(bool bf16) { return std::make_unique<Cast16>(bf16); }

} // namespace hetccl
