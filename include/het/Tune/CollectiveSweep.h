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
  int rounds = 15;
  int64_t timeoutMs = 120000;
};

struct CandidateTime {
  hetcclAlgo_t algo = hetcclAlgoAuto;
  double seconds = 0;                // median round's mean time per call (slowest rank)
  int rounds = 0;                    // rounds measured (fewer: dropped as unable to win)
  hetcclAlgo_t ran = hetcclAlgoAuto; // for auto: the algorithm it ran
  std::vector<double> roundSeconds;  // each round's mean time per call (slowest rank), in order
};

struct SizeResult {
  uint64_t bytes = 0;
  int iterations = 0; // calls per round
  std::vector<CandidateTime> candidates;
  /// The fastest fixed algorithm (auto excluded) among those that ran every
  /// round (none dropped).
  const CandidateTime &best() const;
  /// auto's result, when measured; null otherwise.
  const CandidateTime *autoResult() const;
  /// A fixed algorithm's result; null if it was not timed.
  const CandidateTime *fixed(hetcclAlgo_t algo) const;
};

/// a's time over b's, paired by round: the median over the rounds both ran
/// of a's round time / b's (0 if they share none). Candidates take turns
/// within each round, so a pair ran seconds apart: what changes between
/// rounds (the scheduler's pairing of ranks and cores, other load) divides
/// out, where a ratio of two medians keeps it.
double pairedRatio(const CandidateTime &a, const CandidateTime &b);

struct SweepResult {
  std::string key; // the communicator's key: "allreduce ranks=.. nodes=.. link=.. bytes="
  std::vector<SizeResult> sizes;
};

/// Runs the sweep on `options.ranks` forked local ranks. Throws
/// std::runtime_error naming the rank that failed and why.
SweepResult sweepAllReduce(const SweepOptions &options);

/// This process as one rank of a job a launcher started (het-run, mpirun,
/// srun; hetccl's environment bootstrap: RANK, WORLD_SIZE, HETCCL_ROOT,
/// HETCCL_TOKEN), so that a sweep spans hosts: the records are keyed by
/// that job's shape (nodes, links). `options.ranks` is not used.
class LaunchedSweepRank {
public:
  /// Joins the job; throws std::runtime_error with hetccl's reason.
  explicit LaunchedSweepRank(int64_t timeoutMs);
  ~LaunchedSweepRank();
  LaunchedSweepRank(const LaunchedSweepRank &) = delete;
  LaunchedSweepRank &operator=(const LaunchedSweepRank &) = delete;
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  /// Every rank of the job calls it; every rank gets the same result.
  SweepResult sweep(const SweepOptions &options);
  /// Every rank calls it: whether every rank is ready (so that one rank's
  /// failure, such as rank 0's database, stops all of them at once).
  bool allReady(bool ready);

private:
  hetcclComm_t comm_ = nullptr;
  int rank_ = 0, ranks_ = 0;
};

/// The JSON `details` of a record: every candidate's time, how measured.
std::string sweepDetails(const SizeResult &size, int rounds);

} // namespace het::tune

#endif
