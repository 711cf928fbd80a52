// het-dot-peak: this core's peak multiply-add rate in f32 (AVX-512 FMA) and
// in bf16 (AVX512_BF16's dot product, vdpbf16ps), measured the way
// docs/codegen.md measured the f32 peak: independent accumulators (12, more
// than the latency times the throughput) in a loop of nothing else, on one
// thread. A bf16 dot product does 2 multiply-adds per f32 lane: 64 FLOP per
// 512-bit instruction against an FMA's 32. Prints GFLOP/s of each and
// their ratio, the bar a bf16 step can reach over an f32 one where the
// products dominate (bench/precision/bench.py).
//
//   het-dot-peak [--seconds S]
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

/// Keeps the accumulators' result (so the loop is not optimized away)
/// without _mm512_reduce_add_ps, which GCC 12 warns about wrongly.
__attribute__((target("avx512f"))) void keep(__m512 sum) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  volatile float sink = 0;
  for (float v : lanes)
    sink = sink + v;
}

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 12 accumulators per loop; each iteration issues 12 instructions.
__attribute__((target("avx512f"))) double fmaPeak(long iterations) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i)
    a[i] = _mm512_set1_ps(0.001f * i);
  __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
  double t0 = seconds();
  for (long k = 0; k < iterations; ++k)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm512_fmadd_ps(a[i], x, y);
  double t = seconds() - t0;
  __m512 sum = a[0];
  for (int i = 1; i < 12; ++i)
    sum = _mm512_add_ps(sum, a[i]);
  keep(sum);
  return 12.0 * 32.0 * static_cast<double>(iterations) / t / 1e9;
}

__attribute__((target("avx512f,avx512bf16"))) double dotPeak(long iterations) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i)
    a[i] = _mm512_set1_ps(0.001f * i);
  __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1.0f), _mm512_set1_ps(0.5f));
  __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.25f), _mm512_set1_ps(0.125f));
  double t0 = seconds();
  for (long k = 0; k < iterations; ++k)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm512_dpbf16_ps(a[i], x, y);
  double t = seconds() - t0;
  __m512 sum = a[0];
  for (int i = 1; i < 12; ++i)
    sum = _mm512_add_ps(sum, a[i]);
  keep(sum);
  return 12.0 * 64.0 * static_cast<double>(iterations) / t / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  double budget = 1.0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--seconds") == 0)
      budget = std::atof(argv[i + 1]);
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("het-dot-peak: this CPU has no AVX-512\n");
    return 1;
  }
  // Calibrate to about `budget` seconds per measurement, best of 3.
  long iterations = 1 << 20;
  while (true) {
    double t0 = seconds();
    fmaPeak(iterations);
    if (seconds() - t0 > budget / 10)
      break;
    iterations *= 2;
  }
  iterations *= 10;
  double fma = 0, dot = 0;
  bool bf16 = __builtin_cpu_supports("avx512bf16");
  for (int round = 0; round < 3; ++round) {
    double f = fmaPeak(iterations);
    fma = f > fma ? f : fma;
    if (bf16) {
      double d = dotPeak(iterations);
      dot = d > dot ? d : dot;
    }
  }
  std::printf("f32 FMA peak (AVX-512, 12 accumulators): %.1f GFLOP/s\n", fma);
  if (bf16)
    std::printf("bf16 dot-product peak (vdpbf16ps, 12 accumulators): %.1f GFLOP/s (%.2fx f32)\n",
                dot, dot / fma);
  else
    std::printf("bf16 dot product: this CPU has no AVX512_BF16\n");
  return 0;
}
