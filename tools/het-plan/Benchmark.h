//===- Benchmark.h - het-plan --benchmark ---------------------------------===//
#ifndef HET_TOOLS_HETPLAN_BENCHMARK_H
#define HET_TOOLS_HETPLAN_BENCHMARK_H

#include "het/Plan/DeviceCatalog.h"

#include <ostream>

namespace het::plan {

/// Planning time over layers x devices x kinds, and planner against brute
/// force (time ratio, agreement) on small instances.
void runBenchmark(std::ostream &os, const DeviceCatalog &catalog);

} // namespace het::plan

#endif
