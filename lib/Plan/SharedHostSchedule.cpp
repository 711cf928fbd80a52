//===- SharedHostSchedule.cpp - 1F1B on ranks that share a host's cores ---===//

#include "het/Plan/SharedHostSchedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace het::plan {

namespace {

struct Task {
  bool backward;
  int micro; // -1: the stage's gradient sync and optimizer step
};

/// 1F1B for stage `j` of `S` over `M` micro-batches: warm-up forwards, then
/// one forward one backward, then the remaining backwards; then the sync
/// and update if `finish`.
std::vector<Task> oneFOneB(int j, int S, int M, bool finish) {
  std::vector<Task> order;
  int warm = std::min(S - j - 1, M), f = 0, b = 0;
  for (; f < warm; ++f)
    order.push_back({false, f});
  while (b < M) {
    if (f < M)
      order.push_back({false, f++});
    order.push_back({true, b++});
  }
  if (finish)
    order.push_back({true, -1});
  return order;
}

} // namespace

double simulateSharedHost(const std::vector<SharedHostStage> &stages, int M, int cores,
                          const SharedHostPassFactor &factor,
                          std::vector<SharedHostPass> *passes) {
  const int S = int(stages.size());
  const double never = std::numeric_limits<double>::infinity();
  // When each (stage, micro-batch) forward / backward is done on all the
  // stage's ranks: done[j][i] counts ranks, at[j][i] the last one's time.
  std::vector<std::vector<int>> fwdDone(S, std::vector<int>(M, 0)), bwdDone = fwdDone;
  std::vector<std::vector<double>> fwdAt(S, std::vector<double>(M, 0)), bwdAt = fwdAt;
  struct Rank {
    int stage, index;
    double fwd, bwd;
    std::vector<Task> order;
    size_t next = 0;        // index of the task running or waiting
    double remaining = -1;  // work left of the running task; < 0: not started
    double started = 0;     // when the running task started
  };
  std::vector<Rank> ranks;
  for (int j = 0; j < S; ++j)
    for (size_t r = 0; r < stages[j].fwd.size(); ++r)
      ranks.push_back({j, int(r), stages[j].fwd[r], stages[j].bwd[r],
                       oneFOneB(j, S, M, stages[j].finish > 0)});
  // When the task a rank waits on may start (its inputs arrived); never if
  // they have not been produced yet.
  auto readyAt = [&](const Rank &k) {
    const Task &t = k.order[k.next];
    int j = k.stage;
    if (t.micro < 0)
      return 0.0; // after its own backwards, which came first in its order
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
  std::vector<int> runningOn(size_t(std::max(1, cores)));
  // Rank k (working ranks stage by stage, as the runtime binds them) runs
  // on core k mod cores; the ranks computing on one core share it equally.
  auto coreOf = [&](size_t k) { return int(k % runningOn.size()); };
  auto rateOf = [&](size_t k) { return 1.0 / std::max(1, runningOn[size_t(coreOf(k))]); };
  for (;;) {
    // Start what is ready; count the ranks computing on each core.
    std::fill(runningOn.begin(), runningOn.end(), 0);
    double nextStart = never;
    bool left = false;
    for (size_t i = 0; i < ranks.size(); ++i) {
      Rank &k = ranks[i];
      if (k.next >= k.order.size())
        continue;
      left = true;
      if (k.remaining < 0) {
        double at = readyAt(k);
        if (at <= now) {
          const Task &t = k.order[k.next];
          double work = t.micro < 0 ? stages[k.stage].finish : t.backward ? k.bwd : k.fwd;
          if (factor)
            work *= factor(k.stage, t.backward, t.micro);
          k.remaining = std::max(0.0, work); // < 0 would mean "not started"
          k.started = now;
        } else {
          nextStart = std::min(nextStart, at);
        }
      }
      if (k.remaining >= 0)
        ++runningOn[size_t(coreOf(i))];
    }
    if (!left)
      return now;
    double nextEnd = never;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i].next < ranks[i].order.size() && ranks[i].remaining >= 0)
        nextEnd = std::min(nextEnd, now + ranks[i].remaining / rateOf(i));
    double step = std::min(nextEnd, nextStart);
    if (!std::isfinite(step))
      return never; // a dependency that can never be met (malformed input)
    for (size_t i = 0; i < ranks.size(); ++i) {
      Rank &k = ranks[i];
      if (k.next >= k.order.size() || k.remaining < 0)
        continue;
      // Done when its end is this step's time, computed as the step was
      // (a remainder below the resolution of `now` would never advance it).
      const double rate = rateOf(i);
      const bool finished = now + k.remaining / rate <= step;
      k.remaining = std::max(0.0, k.remaining - (step - now) * rate);
      if (finished) {
        const Task &t = k.order[k.next];
        if (t.micro >= 0) {
          auto &done = t.backward ? bwdDone : fwdDone;
          auto &at = t.backward ? bwdAt : fwdAt;
          ++done[k.stage][t.micro];
          at[k.stage][t.micro] = std::max(at[k.stage][t.micro], step);
        }
        if (passes)
          passes->push_back({k.stage, k.index, t.backward, t.micro, k.started, step});
        ++k.next;
        k.remaining = -1;
      }
    }
    now = step;
  }
}

} // namespace het::plan
