#include "KernelProfile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace het::rt::gpu {

namespace {

using Clock = std::chrono::steady_clock;

// One row of the profile: a kernel with one launch shape.
struct Shape {
  std::string name;
  int64_t grid[3];
  int64_t block[3];
  bool operator<(const Shape &o) const {
    return std::tie(name, grid[0], grid[1], grid[2], block[0], block[1], block[2]) <
           std::tie(o.name, o.grid[0], o.grid[1], o.grid[2], o.block[0], o.block[1], o.block[2]);
  }
};

struct Totals {
  int64_t calls = 0;
  double seconds = 0;
};

struct Profile {
  std::mutex mutex;
  std::map<void *, std::string> names;
  std::map<Shape, Totals> rows;
  bool pending = false;
  Shape current;
  Clock::time_point started;
};

Profile &profile() {
  static Profile *p = new Profile; // never destroyed: printed from atexit
  return *p;
}

void print() {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  std::vector<std::pair<Shape, Totals>> rows(p.rows.begin(), p.rows.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
  double total = 0;
  int64_t calls = 0;
  for (const auto &r : rows) {
    total += r.second.seconds;
    calls += r.second.calls;
  }
  std::fprintf(stderr, "het GPU kernel profile (HET_GPU_PROFILE): %lld launches of %zu kernel shapes, %.3f ms in all\n",
               (long long)calls, rows.size(), 1e3 * total);
  std::fprintf(stderr, "  %8s %7s %10s %10s  %-22s %-14s %s\n", "share", "calls", "total ms", "mean us", "grid",
               "block", "kernel");
  size_t shown = std::min<size_t>(rows.size(), 25);
  for (size_t i = 0; i < shown; ++i) {
    const Shape &s = rows[i].first;
    const Totals &t = rows[i].second;
    char grid[64], block[64];
    std::snprintf(grid, sizeof grid, "%lldx%lldx%lld", (long long)s.grid[0], (long long)s.grid[1],
                  (long long)s.grid[2]);
    std::snprintf(block, sizeof block, "%lldx%lldx%lld", (long long)s.block[0], (long long)s.block[1],
                  (long long)s.block[2]);
    std::fprintf(stderr, "  %7.1f%% %7lld %10.3f %10.1f  %-22s %-14s %s\n",
                 total > 0 ? 100 * t.seconds / total : 0.0, (long long)t.calls, 1e3 * t.seconds,
                 1e6 * t.seconds / double(t.calls), grid, block, s.name.c_str());
  }
  if (rows.size() > shown)
    std::fprintf(stderr, "  ... %zu more kernel shapes\n", rows.size() - shown);
}

} // namespace

bool profilingKernels() {
  static const bool on = [] {
    const char *v = std::getenv("HET_GPU_PROFILE");
    bool enabled = v && *v && std::string(v) != "0";
    if (enabled)
      std::atexit(print);
    return enabled;
  }();
  return on;
}

void nameKernel(void *function, const char *name) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.names[function] = name;
}

void launchStarted(void *function, int64_t gridX, int64_t gridY, int64_t gridZ, int64_t blockX,
                   int64_t blockY, int64_t blockZ) {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto it = p.names.find(function);
  p.current = Shape{it == p.names.end() ? "?" : it->second, {gridX, gridY, gridZ}, {blockX, blockY, blockZ}};
  p.pending = true;
  p.started = Clock::now();
}

void streamSynchronized() {
  Profile &p = profile();
  Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.pending)
    return;
  Totals &t = p.rows[p.current];
  ++t.calls;
  t.seconds += std::chrono::duration<double>(now - p.started).count();
  p.pending = false;
}

} // namespace het::rt::gpu
