//===- MultiplyAddPeaks.h - this core's f32 and bf16 multiply-add rates -*- C++ -*-===//
//
// Whether bf16 products pay on this CPU depends on how fast it runs its
// bf16 dot product against its f32 FMA, and that differs by design: AMD's
// Zen 4 runs a 512-bit vdpbf16ps at the rate of an FMA (so twice the FLOP),
// the Xeon VM of 2026-12-06 at a quarter of it (half the FLOP). Measured,
// not looked up: twelve independent accumulators in named registers (more
// than latency x throughput), one thread, best of three rounds.
//
//===----------------------------------------------------------------------===//

#ifndef HET_SUPPORT_MULTIPLYADDPEAKS_H
#define HET_SUPPORT_MULTIPLYADDPEAKS_H

namespace het::support {

struct MultiplyAddPeaks {
  double f32Gflops = 0;  // AVX-512 FMA (0: no AVX-512)
  double bf16Gflops = 0; // AVX512_BF16 vdpbf16ps, 2 multiply-adds per f32 lane (0: none)
};

/// Measures both on the calling thread for about `seconds` in all.
MultiplyAddPeaks measureMultiplyAddPeaks(double seconds);

/// Whether this CPU has the AVX512-BF16 dot product (vdpbf16ps), which
/// generated bf16 contractions need.
bool hasBf16DotProduct();

} // namespace het::support

#endif
