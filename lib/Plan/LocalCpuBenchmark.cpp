//===- LocalCpuBenchmark.cpp - measure the CPU the planner runs on --------===//
//
// CPUs differ too much for catalog figures to mean anything, so the local
// CPU's entry is measured: an fp32 matrix product of 128x128 matrices in
// i-k-j order (three of them fit in L2, so it needs no further blocking;
// what a simple compiled kernel reaches, not the vector units' peak) on
// every core at once, each thread with its own matrices, and a 64 MiB
// memcpy. It takes a few hundredths of a second and runs once per process.
//
// The CPU trains in every format het compiles for it (docs/precision.md):
// bf16 products natively (oneDNN's bf16 kernels, on AMX tiles where the
// core has them; generated contractions on the AVX512_BF16 dot product) or
// as f32 products of the bf16-rounded operands, whichever this core runs
// faster (het-compile --bf16-products auto), and fp16 widened to f32. So
// bf16 is priced at the fp32 rate times the larger measured advantage of
// the two native paths where there is one, fp16 at the fp32 rate.
//
//===----------------------------------------------------------------------===//
#include "het/Plan/DeviceCatalog.h"
#include "het/Support/MultiplyAddPeaks.h"

#include "DnnlProductRates.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

namespace het::plan {

static double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

// One 128^3 product, i-k-j order; returns a value of the result so the
// loop is not optimized away.
static float product(std::vector<float> &a, std::vector<float> &b, std::vector<float> &c,
                     int n) {
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      float aik = a[i * n + k];
      for (int j = 0; j < n; ++j)
        c[i * n + j] += aik * b[k * n + j];
    }
  return c[n + 1];
}

// The fp32 rate of every core together: `cores` threads start together and
// each runs `rounds` products on its own matrices; the rate is all their
// work over the wall time until the last one ends, best of a few attempts.
static double matmulFlopsAllCores(unsigned cores) {
  const int n = 128, rounds = 4;
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<float> sinks(cores, 0.0f);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < cores; ++t)
      threads.emplace_back([&sinks, t] {
        std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
        for (int r = 0; r < rounds; ++r)
          sinks[t] += product(a, b, c, n);
      });
    for (std::thread &thread : threads)
      thread.join();
    double s = secondsSince(t0);
    volatile float sink = sinks[0];
    (void)sink;
    if (s > 0)
      best = std::max(best, 2.0 * n * n * n * rounds * cores / s);
  }
  return best;
}

DeviceSpec measureLocalCpu(const DeviceSpec &templateSpec) {
  DeviceSpec s = templateSpec;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  s.peakTflops["fp32"] = matmulFlopsAllCores(cores) / 1e12;
  support::MultiplyAddPeaks peaks = support::measureMultiplyAddPeaks(0.02);
  rt::DnnlProductRates dnnl = rt::measureDnnlProductRates(0.05);
  double bf16Advantage = 1.0;
  if (peaks.f32Gflops > 0)
    bf16Advantage = std::max(bf16Advantage, peaks.bf16Gflops / peaks.f32Gflops);
  if (dnnl.f32Gflops > 0)
    bf16Advantage = std::max(bf16Advantage, dnnl.bf16Gflops / dnnl.f32Gflops);
  s.peakTflops["bf16"] = s.peakTflops["fp32"] * bf16Advantage;
  s.peakTflops["fp16"] = s.peakTflops["fp32"];

  const size_t bytes = 64u << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    double sec = secondsSince(t0);
    if (sec > 0)
      best = std::max(best, 2.0 * bytes / sec); // read + write
  }
  s.memoryBandwidthGBs = best / 1e9;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  s.memoryGib = pages > 0 && pageSize > 0
                    ? double(pages) * double(pageSize) / double(1ull << 30)
                    : 1.0;
  s.computeEfficiency = s.memoryEfficiency = 1.0;
  return s;
}

} // namespace het::plan
