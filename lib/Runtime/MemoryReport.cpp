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

#include <cstdio>
#include <sys/resource.h>

namespace het::rt {

std::string memoryReport() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double resident = usage.ru_maxrss / 1024.0; // KiB on Linux
  double buffers = bufferMemory().peak / double(1 << 20);
  char line[128];
  // Small models' buffers are fractions of a MiB: two more digits there.
  std::snprintf(line, sizeof line, "peak %.*f MiB of buffers, peak resident %.1f MiB",
                buffers < 10 ? 3 : 1, buffers, resident);
  return line;
}

} // namespace het::rt
