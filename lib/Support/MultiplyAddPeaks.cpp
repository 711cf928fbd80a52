//===- MultiplyAddPeaks.cpp - this core's f32 and bf16 multiply-add rates --===//
#include "het/Support/MultiplyAddPeaks.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace het::support {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Keeps the accumulators' sum observable (so the loop stays) without
/// _mm512_reduce_add_ps, which GCC 12 warns about wrongly.
__attribute__((target("avx512f"))) void keep(__m512 sum) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  volatile float sink = 0;
  for (float v : lanes)
    sink = sink + v;
}

// Twelve accumulators in named registers: an array of them is kept in
// memory by GCC -O2, and its stores and loads, not the arithmetic, would be
// timed.
#define HET_TWELVE(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define HET_DECLARE(i) __m512 a##i = _mm512_set1_ps(0.001f * (i));
#define HET_SUM(i) sum = _mm512_add_ps(sum, a##i);

__attribute__((target("avx512f"))) double fmaRate(long iterations) {
  HET_TWELVE(HET_DECLARE)
  __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  double t0 = now();
  for (long k = 0; k < iterations; ++k) {
#define HET_FMA(i) a##i = _mm512_fmadd_ps(a##i, x, y);
    HET_TWELVE(HET_FMA)
  }
  double t = now() - t0;
  __m512 sum = _mm512_setzero_ps();
  HET_TWELVE(HET_SUM)
  keep(sum);
  return 12.0 * 32.0 * static_cast<double>(iterations) / t / 1e9;
}

__attribute__((target("avx512f,avx512bf16"))) double dotRate(long iterations) {
  HET_TWELVE(HET_DECLARE)
  __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1.0f), _mm512_set1_ps(0.5f));
  __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.25f), _mm512_set1_ps(0.125f));
  double t0 = now();
  for (long k = 0; k < iterations; ++k) {
#define HET_DOT(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
    HET_TWELVE(HET_DOT)
  }
  double t = now() - t0;
  __m512 sum = _mm512_setzero_ps();
  HET_TWELVE(HET_SUM)
  keep(sum);
  return 12.0 * 64.0 * static_cast<double>(iterations) / t / 1e9;
}

} // namespace

bool hasBf16DotProduct() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}

MultiplyAddPeaks measureMultiplyAddPeaks(double seconds) {
  MultiplyAddPeaks peaks;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f"))
    return peaks;
  bool bf16 = hasBf16DotProduct();
  // Iterations for about a sixth of the budget per measurement (three
  // rounds of one or two).
  long iterations = 1 << 14;
  for (;;) {
    double t0 = now();
    fmaRate(iterations);
    if (now() - t0 > seconds / 60 || iterations > (1L << 40))
      break;
    iterations *= 2;
  }
  iterations *= 10;
  for (int round = 0; round < 3; ++round) {
    peaks.f32Gflops = std::max(peaks.f32Gflops, fmaRate(iterations));
    if (bf16)
      peaks.bf16Gflops = std::max(peaks.bf16Gflops, dotRate(iterations));
  }
  return peaks;
}

} // namespace het::support
