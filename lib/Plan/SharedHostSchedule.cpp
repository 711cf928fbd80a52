//===- SharedHostSchedule.cpp - 1F1B on ranks that share a host's cores ---===//

#include "het/Plan/SharedHostSchedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace het::plan {

namespace {

struct Task {
  bool backward;
  int micro;
};

/// 1F1B for stage `j` of `S` over `M` micro-batches: warm-up forwards, then
/// one forward one backward, then the remaining backwards.
std::vector<Task> oneFOneB(int j, int S, int M) {
  std::vector<Task> order;
  int warm = std::min(S - j - 1, M), f = 0, b = 0;
  for (; f < warm; ++f)
    order.push_back({false, f});
  while (b < M) {
    if (f < M)
      order.push_back({false, f++});
    order.push_back({true, b++});
  }
  return order;
}

} // namespace

double simulateSharedHost(const std::vector<SharedHostStage> &stages, int M, int cores) {
  const int S = int(stages.size());
  const double never = std::numeric_limits<double>::infinity();
  // When each (stage, micro-batch) forward / backward is done on all the
  // stage's ranks: done[j][i] counts ranks, at[j][i] the last one's time.
  std::vector<std::vector<int>> fwdDone(S, std::vector<int>(M, 0)), bwdDone = fwdDone;
  std::vector<std::vector<double>> fwdAt(S, std::vector<double>(M, 0)), bwdAt = fwdAt;
  struct Rank {
    int stage;
    double fwd, bwd;
    std::vector<Task> order;
    size_t next = 0;        // index of the task running or waiting
    double remaining = -1;  // work left of the running task; < 0: not started
  };
  std::vector<Rank> ranks;
  for (int j = 0; j < S; ++j)
    for (size_t r = 0; r < stages[j].fwd.size(); ++r)
      ranks.push_back({j, stages[j].fwd[r], stages[j].bwd[r], oneFOneB(j, S, M)});
  // When the task a rank waits on may start (its inputs arrived); never if
  // they have not been produced yet.
  auto readyAt = [&](const Rank &k) {
    const Task &t = k.order[k.next];
    int j = k.stage;
    if (!t.backward)
      return j == 0 ? 0.0
             : fwdDone[j - 1][t.micro] == int(stages[j - 1].fwd.size())
                 ? fwdAt[j - 1][t.micro] + stages[j - 1].messageToNext
                 : never;
    if (j == S - 1)
      return 0.0; // after its own forward, which came first in its order
    return bwdDone[j + 1][t.micro] == int(stages[j + 1].fwd.size())
               ? bwdAt[j + 1][t.micro] + stages[j].messageToNext
               : never;
  };
  double now = 0;
  for (;;) {
    // Start what is ready; count the ranks computing.
    int running = 0;
    double nextStart = never;
    bool left = false;
    for (Rank &k : ranks) {
      if (k.next >= k.order.size())
        continue;
      left = true;
      if (k.remaining < 0) {
        double at = readyAt(k);
        if (at <= now)
          k.remaining = k.order[k.next].backward ? k.bwd : k.fwd;
        else
          nextStart = std::min(nextStart, at);
      }
      if (k.remaining >= 0)
        ++running;
    }
    if (!left)
      return now;
    double rate = running > cores ? double(cores) / running : 1.0;
    double nextEnd = never;
    for (const Rank &k : ranks)
      if (k.next < k.order.size() && k.remaining >= 0)
        nextEnd = std::min(nextEnd, now + k.remaining / rate);
    double step = std::min(nextEnd, nextStart);
    if (!std::isfinite(step))
      return never; // a dependency that can never be met (malformed input)
    for (Rank &k : ranks) {
      if (k.next >= k.order.size() || k.remaining < 0)
        continue;
      k.remaining -= (step - now) * rate;
      if (k.remaining <= 1e-15) {
        const Task &t = k.order[k.next];
        auto &done = t.backward ? bwdDone : fwdDone;
        auto &at = t.backward ? bwdAt : fwdAt;
        ++done[k.stage][t.micro];
        at[k.stage][t.micro] = std::max(at[k.stage][t.micro], step);
        ++k.next;
        k.remaining = -1;
      }
    }
    now = step;
  }
}

} // namespace het::plan
