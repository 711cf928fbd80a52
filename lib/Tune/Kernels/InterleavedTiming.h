//===- InterleavedTiming.h - timing candidates in alternating rounds -*- C++ -*-===//
//
// How het-tune kernels times the candidates of one measurement (GEMM
// engines, contraction tilings): R rounds, the first candidate rotating per
// round so that none is always timed first; a round runs each live
// candidate `calls` times and keeps its median call (interrupts drop out);
// a candidate's time is its best round (the least disturbed). After round
// `dropAfter` (0-based) a candidate over `dropFactor` x the best so far is
// dropped: it cannot win.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_TUNE_KERNELS_INTERLEAVEDTIMING_H
#define HET_LIB_TUNE_KERNELS_INTERLEAVEDTIMING_H

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace het::tune {

inline double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A candidate's timing state; the candidate types derive from it.
struct Timed {
  double best = 1e30;
  int rounds = 0;
  bool dropped = false;
};

/// `run(candidate)` makes one call of it.
template <typename Candidate, typename Run>
void timeInterleaved(std::vector<Candidate> &candidates, int rounds, int calls, int dropAfter,
                     double dropFactor, Run run) {
  for (int round = 0; round < rounds; ++round) {
    for (size_t j = 0; j < candidates.size(); ++j) {
      Candidate &candidate = candidates[(j + size_t(round)) % candidates.size()];
      if (candidate.dropped)
        continue;
      std::vector<double> times;
      for (int call = 0; call < calls; ++call) {
        double begin = steadySeconds();
        run(candidate);
        times.push_back(steadySeconds() - begin);
      }
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      candidate.best = std::min(candidate.best, times[times.size() / 2]);
      ++candidate.rounds;
    }
    if (round == dropAfter) {
      double best = 1e30;
      for (const Candidate &candidate : candidates)
        best = std::min(best, candidate.best);
      for (Candidate &candidate : candidates)
        candidate.dropped = candidate.best > dropFactor * best;
    }
  }
}

} // namespace het::tune

#endif
