//===- MoEReport.cpp - expert choices a run dropped ------------------------===//

#include "MoEReport.h"

#include <atomic>
#include <cstdio>

namespace het::rt {

namespace {
// Kernels may run on the threads of a layer's parallel loops.
std::atomic<int64_t> routedChoices{0}, droppedChoices{0};
} // namespace

void countExpertChoices(int64_t routed, int64_t dropped) {
  routedChoices += routed;
  droppedChoices += dropped;
}

std::string moeReport() {
  int64_t routed = routedChoices.load(), dropped = droppedChoices.load();
  if (routed == 0)
    return {};
  char line[160];
  std::snprintf(line, sizeof line, "%lld of %lld expert choices dropped by capacity (%.2f %%)",
                static_cast<long long>(dropped), static_cast<long long>(routed),
                100.0 * double(dropped) / double(routed));
  return line;
}

} // namespace het::rt
