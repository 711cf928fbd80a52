//===- DnnlProductRates.h - oneDNN's f32 and bf16 matrix-product rates -*- C++ -*-===//
//
// Whether oneDNN's bf16 products pay is not the bf16 dot product's rate
// against the FMA's: on a core with AMX (Sapphire and Emerald Rapids)
// oneDNN runs bf16 matmuls on the tile unit, several times its f32 speed,
// while vdpbf16ps alone is half the FMA's FLOP rate there too. So
// het-compile --bf16-products=auto times oneDNN itself: one matmul of the
// bench MLP's hidden layer (256 x 1024 x 1024) in f32 and in bf16 (bf16
// inputs, f32 output, as het's linear layers call it), one thread,
// alternating, best of several. Built into het-compile and het-dot-peak.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_DNNLPRODUCTRATES_H
#define HET_LIB_RUNTIME_DNNLPRODUCTRATES_H

#include <string>

namespace het::rt {

struct DnnlProductRates {
  double f32Gflops = 0;
  double bf16Gflops = 0; // 0: oneDNN has no bf16 matmul on this CPU
  std::string bf16Kernel; // oneDNN's implementation of the bf16 matmul, e.g. "brg:avx512_core_amx"
};

/// Measures both for about `seconds` in all on the calling thread.
DnnlProductRates measureDnnlProductRates(double seconds);

} // namespace het::rt

#endif
