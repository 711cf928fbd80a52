//===- Philox.h - the counter-based generator behind het's randomness ---*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11; the generator of cuRAND and of PyTorch's CUDA dropout): ten
// rounds of two 32x32->64-bit multiplications keyed by a 64-bit key, over a
// 128-bit counter. One header for the evaluator and libhetrt's kernels so
// that both draw the same numbers; a GPU lowering must reproduce it bit for
// bit (test/unittests/Eval/EvalTest.cpp pins the known-answer vectors).
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_EVAL_PHILOX_H
#define HET_LIB_EVAL_PHILOX_H

#include <array>
#include <cstdint>

namespace het::eval {

using PhiloxWords = std::array<uint32_t, 4>;

inline PhiloxWords philox4x32(PhiloxWords counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t product0 = uint64_t(kMultiplier0) * counter[0];
    uint64_t product1 = uint64_t(kMultiplier1) * counter[2];
    counter = {uint32_t(product1 >> 32) ^ counter[1] ^ key[0], uint32_t(product1),
               uint32_t(product0 >> 32) ^ counter[3] ^ key[1], uint32_t(product0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return counter;
}

/// The uniform number in [0, 1) that het.dropout compares with p: the top
/// 24 bits of the first word for element `index` of a step's batch.
inline double dropoutUniform(int64_t seed, int64_t stream, int64_t step, int64_t index) {
  PhiloxWords words = philox4x32(
      {uint32_t(uint64_t(index)), uint32_t(uint64_t(index) >> 32), uint32_t(uint64_t(step)),
       uint32_t(uint64_t(step) >> 32)},
      {uint32_t(uint64_t(seed)) ^ uint32_t(uint64_t(seed) >> 32), uint32_t(stream)});
  return double(words[0] >> 8) * (1.0 / 16777216.0);
}

} // namespace het::eval

#endif
