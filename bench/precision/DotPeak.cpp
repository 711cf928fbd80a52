// het-dot-peak: this core's peak multiply-add rate in f32 (AVX-512 FMA) and
// in bf16 (AVX512_BF16's dot product, vdpbf16ps), measured as docs/codegen.md
// measured the f32 peak (het/Support/MultiplyAddPeaks.h: independent
// accumulators, one thread, best of three). A bf16 dot product does 2
// multiply-adds per f32 lane: 64 FLOP per 512-bit instruction against an
// FMA's 32. These are the bars of bench/precision/bench.py, and what
// het-compile --bf16-products=auto decides generated contractions by
// (--library=mlir). Then oneDNN's matmul rates in f32 and bf16 (one
// thread, 256 x 1024 x 1024), which decide oneDNN's products: on a core
// with AMX oneDNN's bf16 runs on the tile unit, whatever vdpbf16ps does.
//
//   het-dot-peak [--seconds S]
#include "het/Support/MultiplyAddPeaks.h"

#include "DnnlProductRates.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
  double seconds = 1.0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--seconds") == 0)
      seconds = std::atof(argv[i + 1]);
  het::support::MultiplyAddPeaks peaks = het::support::measureMultiplyAddPeaks(seconds);
  if (peaks.f32Gflops == 0) {
    std::printf("het-dot-peak: this CPU has no AVX-512\n");
    return 1;
  }
  std::printf("f32 FMA peak (AVX-512, 12 accumulators): %.1f GFLOP/s\n", peaks.f32Gflops);
  if (peaks.bf16Gflops > 0)
    std::printf("bf16 dot-product peak (vdpbf16ps, 12 accumulators): %.1f GFLOP/s (%.2fx f32)\n",
                peaks.bf16Gflops, peaks.bf16Gflops / peaks.f32Gflops);
  else
    std::printf("bf16 dot product: this CPU has no AVX512_BF16\n");
  het::rt::DnnlProductRates dnnl = het::rt::measureDnnlProductRates(seconds);
  std::printf("oneDNN f32 matmul (256 x 1024 x 1024, one thread): %.1f GFLOP/s\n", dnnl.f32Gflops);
  if (dnnl.bf16Gflops > 0)
    std::printf("oneDNN bf16 matmul (bf16 inputs, f32 output): %.1f GFLOP/s (%.2fx f32; %s)\n",
                dnnl.bf16Gflops, dnnl.bf16Gflops / dnnl.f32Gflops, dnnl.bf16Kernel.c_str());
  else
    std::printf("oneDNN bf16 matmul: none on this CPU\n");
  return 0;
}
