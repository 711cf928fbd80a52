//===- LocalCpuBenchmark.cpp - measure the CPU the planner runs on --------===//
//
// CPUs differ too much for catalog figures to mean anything, so the local
// CPU's entry is measured: a cache-blocked fp32 matrix product on every core
// (what a het CPU kernel reaches, not the vector units' peak) and a large
// memcpy. It takes about a tenth of a second and runs once per process.
//
//===----------------------------------------------------------------------===//
#include "het/Plan/DeviceCatalog.h"

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

// One core's fp32 rate on a 128^3 blocked product, best of a few rounds.
static double matmulFlopsOneCore() {
  const int n = 128;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
  double best = 0;
  for (int round = 0; round < 4; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        float aik = a[i * n + k];
        for (int j = 0; j < n; ++j)
          c[i * n + j] += aik * b[k * n + j];
      }
    double s = secondsSince(t0);
    if (s > 0)
      best = std::max(best, 2.0 * n * n * n / s);
  }
  // Keep the result alive so the loop is not optimized away.
  volatile float sink = c[n + 1];
  (void)sink;
  return best;
}

DeviceSpec measureLocalCpu(const DeviceSpec &templateSpec) {
  DeviceSpec s = templateSpec;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  s.peakTflops["fp32"] = matmulFlopsOneCore() * cores / 1e12;

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
