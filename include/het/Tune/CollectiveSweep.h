//===- CollectiveSweep.h - measuring hetccl's all-reduce algorithms -*- C++ -*-===//
//
// `het-tune collectives`: forks local ranks that form one hetccl
// communicator and time every all-reduce algorithm at a ladder of sizes,
// in interleaved rounds; the fastest per size becomes a tuning record.
//
//===----------------------------------------------------------------------===//
#ifndef HET_TUNE_COLLECTIVESWEEP_H
#define HET_TUNE_COLLECTIVESWEEP_H

#include "het-c/hetccl.h"

#include <cstdint>
#include <string>
#include <vector>

namespace het::tune {

struct SweepOptions {
  int ranks = 2;
  std::vector<uint64_t> sizes;          // bytes, f32 sum
  std::vector<hetcclAlgo_t> candidates; // empty: every algorithm that applies
  /// Also time `auto` (as this process's environment configures it, e.g.
  /// with HETCCL_TUNING_DB): the check that a tuned auto is as fast as the
  /// best fixed algorithm. auto is never dropped.
  bool includeAuto = false;
  int rounds = 5;
  int64_t timeoutMs = 120000;
};

struct CandidateTime {
  hetcclAlgo_t algo = hetcclAlgoAuto;
  double seconds = 0;                // best round's mean time per call (slowest rank)
  int rounds = 0;                    // rounds measured (fewer: dropped as unable to win)
  hetcclAlgo_t ran = hetcclAlgoAuto; // for auto: the algorithm it ran
};

struct SizeResult {
  uint64_t bytes = 0;
  int iterations = 0; // calls per round
  std::vector<CandidateTime> candidates;
  /// The fastest fixed algorithm (auto excluded).
  const CandidateTime &best() const;
  /// auto's result, when measured; null otherwise.
  const CandidateTime *autoResult() const;
  /// A fixed algorithm's result; null if it was not timed.
  const CandidateTime *fixed(hetcclAlgo_t algo) const;
};

struct SweepResult {
  std::string key; // the communicator's key: "allreduce ranks=.. nodes=.. link=.. bytes="
  std::vector<SizeResult> sizes;
};

/// Runs the sweep on `options.ranks` forked local ranks. Throws
/// std::runtime_error naming the rank that failed and why.
SweepResult sweepAllReduce(const SweepOptions &options);

/// The JSON `details` of a record: every candidate's time, how measured.
std::string sweepDetails(const SizeResult &size, int rounds);

} // namespace het::tune

#endif
