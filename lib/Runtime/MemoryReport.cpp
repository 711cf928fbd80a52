//===- MemoryReport.cpp - what a run held in memory ------------------------===//
//
// Each executable ends with one line of memory per process (each rank of
// a pipeline: its stage's parameters, state and in-flight activations),
// which the planner's memory model is checked against
// (bench/memory/predicted.py).
//
//===----------------------------------------------------------------------===//

#include "MemoryReport.h"

#include "Gpu/HostVisibleMemory.h"

#include <algorithm>
#include <cstdio>
#include <sys/resource.h>
#include <utility>
#include <vector>

namespace het::rt {

namespace {
double residentMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0; // KiB on Linux
}

/// Small models' buffers are fractions of a MiB: two more digits there.
std::string mib(double bytes) {
  double m = bytes / double(1 << 20);
  char text[32];
  std::snprintf(text, sizeof text, "%.*f MiB", m < 10 ? 3 : 1, m);
  return text;
}
} // namespace

std::string memoryReport() {
  char line[128];
  std::snprintf(line, sizeof line, "peak %s of buffers, peak resident %.1f MiB",
                mib(double(bufferMemory().peak)).c_str(), residentMiB());
  return line;
}

std::string memoryProfile() {
  BufferMemory m = bufferMemory();
  std::vector<std::pair<size_t, MemoryUse>> uses;
  for (int u = 0; u < kMemoryUses; ++u)
    if (m.peakByUse[u] > 0)
      uses.push_back({m.peakByUse[u], static_cast<MemoryUse>(u)});
  std::stable_sort(uses.begin(), uses.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  std::string text = "peak of buffers " + mib(double(m.peak));
  if (!m.peakPhase.empty())
    text += " in " + m.peakPhase;
  text += ":";
  for (size_t k = 0; k < uses.size(); ++k) {
    char share[16];
    std::snprintf(share, sizeof share, " (%.0f%%)", 100.0 * double(uses[k].first) / double(m.peak));
    text += std::string(k ? ", " : " ") + memoryUseName(uses[k].second) + " " +
            mib(double(uses[k].first)) + share;
  }
  char rest[160];
  std::snprintf(rest, sizeof rest,
                "; beyond the buffers, the resident peak of %.1f MiB holds code, libraries, "
                "the kernel libraries' workspace and caches, and message staging",
                residentMiB());
  return text + rest;
}

} // namespace het::rt
