// Element types and reduction kernels. f16 and bf16 are reduced by widening
// to float and rounding back (round to nearest even) after every binary
// step, so the result of one step does not depend on the algorithm; integer
// arithmetic is done in unsigned types so overflow wraps (defined, and
// order independent) instead of being undefined.
#pragma once

#include "het-c/hetccl.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hetccl {

size_t dtypeSize(hetcclDataType_t t);
const char* dtypeName(hetcclDataType_t t);
const char* opName(hetcclRedOp_t op);
bool dtypeValid(int t);
bool opValid(int op);

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
// A shift into the high half: inline, so that loops over bf16 values (the
// runtime's sums, the compressed ring's casts) vectorize instead of making a
// call per element.
inline float bf16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint16_t floatToBf16(float f);

// acc[i] = acc[i] (op) in[i] for n elements. Avg reduces as Sum; the caller
// divides once at the end (finalizeAvg) so rounding happens exactly once.
using ReduceFn = void (*)(void* acc, const void* in, size_t n);
ReduceFn reduceFn(hetcclDataType_t t, hetcclRedOp_t op);
// out[i] = a[i] (op) b[i].
void reduce3(void* out, const void* a, const void* b, size_t n, hetcclDataType_t t, hetcclRedOp_t op);
// buf[i] /= nranks (integer types truncate toward zero, like NCCL).
void finalizeAvg(void* buf, size_t n, hetcclDataType_t t, int nranks);

} // namespace hetccl
