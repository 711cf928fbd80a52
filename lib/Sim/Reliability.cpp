//===- Reliability.cpp - failures, checkpoints and goodput over a run -----===//
#include "het/Sim/Reliability.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace het::sim {

namespace {

struct Trial {
  double progress = 0, lost = 0, down = 0, stalls = 0;
  long iterations = 0;
  int failures = 0, preemptions = 0;
};

Trial runOnce(const std::vector<double> &times, const FailureModel &model, long every,
              double horizon, uint64_t seed) {
  Trial r;
  // Separate streams for failures and for iteration times, so that every
  // checkpoint interval meets the same failures (common random numbers).
  std::mt19937_64 failureRng(seed), timeRng(seed ^ 0xa5a5a5a5a5a5a5a5ULL);
  const double rate = (model.failuresPerHour + model.preemptionsPerHour) / 3600;
  const double preemptShare =
      rate > 0 ? model.preemptionsPerHour / (model.failuresPerHour + model.preemptionsPerHour) : 0;
  std::exponential_distribution<double> gap(rate > 0 ? rate : 1);
  std::uniform_real_distribution<double> unit(0, 1);
  std::uniform_int_distribution<size_t> pick(0, times.size() - 1);
  auto nextLoss = [&](double now) { return rate > 0 ? now + gap(failureRng) : INFINITY; };

  double t = 0, loss = nextLoss(0);
  long done = 0, durable = 0;      // iterations completed; in the last durable checkpoint
  double sinceDurable = 0;         // progress not yet in a durable checkpoint
  double writing = -1;             // when the checkpoint being written is durable
  long writingAt = 0;
  double writingProgress = 0;      // progress it will make durable, since the last
  while (t < horizon) {
    double it = times[pick(timeRng)];
    if (writing >= 0 && writing <= t) {
      durable = writingAt;
      sinceDurable -= writingProgress;
      writing = -1;
    }
    if (t + it > loss) {
      // Everything since the last durable checkpoint is redone.
      bool preempted = unit(failureRng) < preemptShare;
      (preempted ? r.preemptions : r.failures) += 1;
      r.lost += sinceDurable + (loss - t);
      r.progress -= sinceDurable;
      done = durable;
      sinceDurable = 0;
      writing = -1;
      double restart = model.detectSeconds + model.restartSeconds + model.loadSeconds;
      r.down += restart;
      t = loss + restart;
      loss = nextLoss(t);
      continue;
    }
    t += it;
    r.progress += it;
    sinceDurable += it;
    ++done;
    if (every > 0 && done % every == 0 && writing < 0) {
      t += model.checkpointStallSeconds;
      r.stalls += model.checkpointStallSeconds;
      writing = t + model.checkpointWriteSeconds;
      writingAt = done;
      writingProgress = sinceDurable;
    }
  }
  r.iterations = done;
  return r;
}

} // namespace

RunOutcome simulateRun(const std::vector<double> &iterationTimes, const FailureModel &model,
                       long checkpointEvery, double wallHours, int trials, uint64_t seed) {
  RunOutcome out;
  if (iterationTimes.empty() || trials < 1 || wallHours <= 0)
    return out;
  const double horizon = wallHours * 3600;
  for (int k = 0; k < trials; ++k) {
    Trial r = runOnce(iterationTimes, model, checkpointEvery, horizon,
                      seed * 1000003ULL + uint64_t(k));
    out.progressSeconds += r.progress;
    out.lostSeconds += r.lost;
    out.downSeconds += r.down;
    out.checkpointSeconds += r.stalls;
    out.failures += r.failures;
    out.preemptions += r.preemptions;
    out.iterations += double(r.iterations);
  }
  for (double *v : {&out.progressSeconds, &out.lostSeconds, &out.downSeconds,
                    &out.checkpointSeconds, &out.failures, &out.preemptions, &out.iterations})
    *v /= trials;
  out.wallSeconds = horizon;
  out.goodput = out.progressSeconds / horizon;
  return out;
}

double youngInterval(double stall, double mtbf) { return std::sqrt(2 * stall * mtbf); }

double dalyInterval(double stall, double mtbf) {
  if (stall >= 2 * mtbf)
    return mtbf;
  return std::sqrt(2 * stall * mtbf) *
             (1 + std::sqrt(stall / (2 * mtbf)) / 3 + stall / (18 * mtbf)) -
         stall;
}

std::vector<IntervalChoice> sweepCheckpointInterval(const std::vector<double> &times,
                                                    const FailureModel &model, double wallHours,
                                                    int trials, uint64_t seed,
                                                    const std::vector<long> &extra) {
  double mean = 0;
  for (double t : times)
    mean += t;
  mean /= std::max<size_t>(1, times.size());
  const long most = std::max(1L, long(wallHours * 3600 / std::max(mean, 1e-9)));
  std::set<long> candidates(extra.begin(), extra.end());
  for (double k = 1; k <= double(most); k = std::max(k + 1, k * 1.25))
    candidates.insert(long(k));
  std::vector<IntervalChoice> out;
  for (long k : candidates)
    if (k >= 1)
      out.push_back({k, simulateRun(times, model, k, wallHours, trials, seed)});
  std::stable_sort(out.begin(), out.end(), [](const IntervalChoice &a, const IntervalChoice &b) {
    return a.outcome.goodput > b.outcome.goodput;
  });
  return out;
}

RunSteps runSteps(const std::vector<double> &times, double wallHours, double maxSteps) {
  RunSteps out;
  if (times.empty())
    return out;
  double mean = 0;
  for (double t : times)
    mean += t;
  mean /= double(times.size());
  const double iterations = wallHours * 3600 / std::max(mean, 1e-12);
  out.chunk = std::max(1L, long(std::ceil(iterations / maxSteps)));
  if (out.chunk == 1) {
    out.times = times;
    return out;
  }
  out.times.resize(times.size());
  for (size_t i = 0; i < times.size(); ++i)
    for (long k = 0; k < out.chunk; ++k)
      out.times[i] += times[(i + size_t(k)) % times.size()];
  return out;
}

} // namespace het::sim
