// Shared by the three benchmark workers so they time the same thing: sizes
// 4 KiB .. 64 MiB (x4), iterations scaled so each size moves ~256 MiB, and
// the time of an all-reduce is the slowest rank's average.
#pragma once

#include <cstddef>
#include <cstdio>
#include <ctime>
#include <vector>

namespace cclbench {

inline std::vector<size_t> sizes(size_t lo = 4 << 10, size_t hi = 64 << 20) {
  std::vector<size_t> v;
  for (size_t s = lo; s <= hi; s *= 4) v.push_back(s);
  return v;
}

inline int itersFor(size_t bytes) {
  size_t n = (size_t(256) << 20) / bytes;
  return int(n < 5 ? 5 : n > 200 ? 200 : n);
}

inline double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// All-to-all-v's uneven blocks: rank `from` sends about `bytes` in all,
// split over the ranks in weights 1, 2, 3 by (from + to) % 3, so every
// pair's block differs from its neighbours'. Counts in floats.
inline size_t alltoallvCount(size_t bytes, int from, int to, int n) {
  size_t weights = 0;
  for (int q = 0; q < n; ++q) weights += size_t(1 + (from + q) % 3);
  return bytes / 4 * size_t(1 + (from + to) % 3) / weights;
}

// One rank's blocks of such an all-to-all-v, packed in rank order; Count is
// size_t for hetccl, int for MPI.
template <typename Count> struct AllToAllVBlocks {
  std::vector<Count> sendCounts, sendOffsets, recvCounts, recvOffsets;
  Count sent = 0, received = 0;
  AllToAllVBlocks(size_t bytes, int rank, int n) {
    for (int q = 0; q < n; ++q) {
      sendCounts.push_back(Count(alltoallvCount(bytes, rank, q, n)));
      recvCounts.push_back(Count(alltoallvCount(bytes, q, rank, n)));
      sendOffsets.push_back(sent);
      recvOffsets.push_back(received);
      sent += sendCounts.back();
      received += recvCounts.back();
    }
  }
};

// Result line the driver parses: "RESULT <bytes> <seconds per all-reduce>".
inline void report(FILE* f, size_t bytes, double sec) { fprintf(f, "RESULT %zu %.9f\n", bytes, sec); }

} // namespace cclbench
