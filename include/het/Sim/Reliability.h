//===- Reliability.h - failures, checkpoints and goodput over a run -*- C++ -*-===//
//
// A thousand devices fail every few days between them. Over a run of many
// hours this simulates failures and spot preemptions (Poisson, from each
// device's mean time between failures), their detection, restart and
// checkpoint reload, the work lost since the last durable checkpoint, and
// the stall each checkpoint costs; iteration times are drawn from those
// het-sim simulated. Goodput is the fraction of wall time that ends up as
// training progress.
//
//===----------------------------------------------------------------------===//
#ifndef HET_SIM_RELIABILITY_H
#define HET_SIM_RELIABILITY_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace het::sim {

struct FailureModel {
  double failuresPerHour = 0;    // the whole job: sum over devices of 1 / MTBF
  double preemptionsPerHour = 0; // spot devices taken back, whole job
  double detectSeconds = 30;     // until the loss is noticed
  double restartSeconds = 300;   // new processes, rendezvous, warm-up
  double loadSeconds = 0;        // reading the checkpoint back
  /// Training stands still while a checkpoint is snapshotted ...
  double checkpointStallSeconds = 0;
  /// ... and the checkpoint is usable only once written, this much later;
  /// a checkpoint due while the previous one is still being written is
  /// skipped.
  double checkpointWriteSeconds = 0;
};

struct RunOutcome {
  double wallSeconds = 0;
  double progressSeconds = 0; // iteration time that survived to the end
  double goodput = 0;         // progressSeconds / wallSeconds
  double failures = 0, preemptions = 0; // per trial, on average
  double lostSeconds = 0;       // work redone, per trial
  double downSeconds = 0;       // detecting, restarting, reloading
  double checkpointSeconds = 0; // stalls
  double iterations = 0;        // that survived, per trial
};

/// `trials` runs of `wallHours` each (averaged), checkpointing every
/// `checkpointEvery` iterations (0: never), iteration times drawn from
/// `iterationTimes`.
RunOutcome simulateRun(const std::vector<double> &iterationTimes, const FailureModel &model,
                       long checkpointEvery, double wallHours, int trials, uint64_t seed);

/// Young (1974): sqrt(2 delta M) seconds between checkpoints for a stall of
/// delta and a mean time between failures M. Daly (2006) adds the
/// higher-order terms: sqrt(2 delta M)(1 + sqrt(delta / 2M) / 3 + delta /
/// 18M) - delta, for delta < 2M (else M).
double youngInterval(double stallSeconds, double mtbfSeconds);
double dalyInterval(double stallSeconds, double mtbfSeconds);

struct IntervalChoice {
  long every = 0; // iterations between checkpoints
  RunOutcome outcome;
};

/// Goodput of checkpointing every k iterations for k on a geometric grid
/// (and at `extra`), the same failures for every k (common random
/// numbers); the best first.
std::vector<IntervalChoice> sweepCheckpointInterval(const std::vector<double> &iterationTimes,
                                                    const FailureModel &model, double wallHours,
                                                    int trials, uint64_t seed,
                                                    const std::vector<long> &extra);

/// A run is simulated iteration by iteration; a plan of 0.06 ms per
/// iteration would take 4e10 of them in 720 hours. Steps of `chunk`
/// iterations keep a run within `maxSteps` steps: each step's time is the
/// sum of `chunk` consecutive sampled iterations (cyclically), a loss inside
/// a step costs the time since the step began (as inside an iteration),
/// and checkpoint intervals count steps.
struct RunSteps {
  std::vector<double> times; // seconds per step
  long chunk = 1;            // iterations per step
  /// Steps between checkpoints for an interval of `iterations` (>= 1), and
  /// back.
  long stepsOf(long iterations) const {
    return std::max(1L, (iterations + chunk / 2) / chunk);
  }
  long iterationsOf(long steps) const { return steps * chunk; }
};
RunSteps runSteps(const std::vector<double> &iterationTimes, double wallHours,
                  double maxSteps = 2e5);

} // namespace het::sim

#endif
