//===- CollectiveSweep.cpp - timing hetccl's all-reduce algorithms ---------===//
//
// Each forked rank runs the same schedule: per size, R rounds; in each round
// every live candidate is set (hetcclCommSetAlgorithm), warmed up twice and
// timed over a fixed number of calls; the slowest rank's mean is the
// candidate's time for the round (an all-reduce of the times with max), so
// every rank sees the same numbers and makes the same decisions. A
// candidate's result is its median round (what a job meets most of the
// time: with more ranks than cores, the best round is a lucky pairing of
// ranks by the scheduler, and two algorithms' best rounds may rank them
// the other way round from their usual times); each round starts with the
// next candidate. After three rounds, candidates whose median so far is
// slower than twice the fastest's are dropped: they cannot win; the best
// is chosen among those that ran every round. A candidate that does
// not apply (one-shot beyond the board, for instance: hetccl would run
// another algorithm) is never timed under its name.
//
//===----------------------------------------------------------------------===//

#include "het/Tune/CollectiveSweep.h"

#include "ForkedRanks.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace het::tune {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Calls per round: enough for ~32 MiB of traffic, at least 5, at most
/// 2000 (a few to tens of milliseconds). Short rounds, many of them: with
/// more ranks than cores a round's time depends on how the scheduler pairs
/// the ranks, which holds for a while; long rounds gave the same code
/// 0.6-1.1x of itself from round to round, 15 short ones 0.98-1.04x.
int iterationsFor(uint64_t bytes) {
  return int(std::clamp<uint64_t>((32ull << 20) / std::max<uint64_t>(bytes, 1), 5, 2000));
}

/// Rounds every candidate runs before those slower than twice the fastest
/// (median so far) are dropped. After one round, a single slow round --
/// the scheduler pairing two ranks on one core for a while -- dropped the
/// algorithm that won every later round (two-shot at 64 MiB, 2 ranks:
/// 1.93 GB/s in round 0, the fastest in the check after).
constexpr int kRoundsBeforeDropping = 3;

/// A candidate's time: its median round (the lower of the middle two for an
/// even count), from each round's mean time per call.
double medianRound(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times.empty() ? 1e300 : times[(times.size() - 1) / 2];
}

struct RankFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(hetcclResult_t result, hetcclComm_t comm, const char *what) {
  if (result != hetcclSuccess)
    throw RankFailure(std::string(what) + ": " + hetcclGetLastError(comm));
}

/// One rank's part; rank 0 returns the result text for the parent.
/// One rank's part of the sweep over `comm`; every rank returns the same
/// text (the times are the slowest rank's).
std::string sweepOnComm(const SweepOptions &o, hetcclComm_t comm, int rank) {
  char key[256];
  check(hetcclCommTuningKey(comm, key, sizeof key), comm, "tuning key");
  std::vector<hetcclAlgo_t> candidates = o.candidates;
  if (candidates.empty())
    for (int a = 1; a < hetcclNumAlgos; ++a)
      candidates.push_back(hetcclAlgo_t(a));
  if (o.includeAuto)
    candidates.insert(candidates.begin(), hetcclAlgoAuto);
  std::ostringstream out;
  out.precision(17); // round times travel to the parent as text: every bit of them
  out << "key " << key << "\n";
  for (uint64_t bytes : o.sizes) {
    size_t count = std::max<size_t>(bytes / sizeof(float), 1);
    std::vector<float> send(count), recv(count);
    for (size_t i = 0; i < count; ++i)
      send[i] = float((i + size_t(rank)) % 17);
    int iterations = iterationsFor(bytes);
    struct Live {
      hetcclAlgo_t algo;
      hetcclAlgo_t ran;
      std::vector<double> times; // per round: the slowest rank's mean
      double median() const { return medianRound(times); }
      bool alive = true;
    };
    std::vector<Live> live;
    for (hetcclAlgo_t a : candidates) {
      // Only what really runs under the name: auto, or a fixed algorithm
      // that hetccl does not replace at this size.
      check(hetcclCommSetAlgorithm(comm, a), comm, "set algorithm");
      hetcclAlgo_t runs;
      check(hetcclCommPickAlgorithm(comm, count * sizeof(float), &runs), comm, "pick");
      if (a == hetcclAlgoAuto || runs == a)
        live.push_back({a, runs, {}});
    }
    for (int round = 0; round < o.rounds; ++round) {
      // Each round starts with another candidate, so that none is always
      // the one timed right after the previous size or the barrier.
      for (size_t turn = 0; turn < live.size(); ++turn) {
        Live &c = live[(turn + size_t(round)) % live.size()];
        if (!c.alive)
          continue;
        check(hetcclCommSetAlgorithm(comm, c.algo), comm, "set algorithm");
        for (int w = 0; w < 2; ++w)
          check(hetcclAllReduce(send.data(), recv.data(), count, hetcclFloat32, hetcclSum, comm),
                comm, "warm-up all-reduce");
        double start = now();
        for (int i = 0; i < iterations; ++i)
          check(hetcclAllReduce(send.data(), recv.data(), count, hetcclFloat32, hetcclSum, comm),
                comm, "timed all-reduce");
        double mean = (now() - start) / iterations, slowest = 0;
        check(hetcclCommSetAlgorithm(comm, hetcclAlgoRing), comm, "set algorithm");
        check(hetcclAllReduce(&mean, &slowest, 1, hetcclFloat64, hetcclMax, comm), comm,
              "all-reduce of the times");
        c.times.push_back(slowest);
      }
      if (round + 1 == kRoundsBeforeDropping) {
        double fastest = 1e300;
        for (const Live &c : live)
          if (c.algo != hetcclAlgoAuto)
            fastest = std::min(fastest, c.median());
        for (Live &c : live)
          if (c.algo != hetcclAlgoAuto && c.median() > 2 * fastest)
            c.alive = false;
      }
    }
    out << "size " << bytes << " " << iterations << "\n";
    for (const Live &c : live) {
      out << "candidate " << int(c.algo) << " " << int(c.ran);
      for (double t : c.times)
        out << " " << t;
      out << "\n";
    }
  }
  return out.str();
}

/// One forked rank: its own communicator, destroyed at the end.
std::string runRank(const SweepOptions &o, const hetcclUniqueId &id, int rank) {
  hetcclConfig_t config = HETCCL_CONFIG_INITIALIZER;
  config.timeoutMs = o.timeoutMs;
  hetcclComm_t comm = nullptr;
  check(hetcclCommInitRank(&comm, o.ranks, id, rank, &config), nullptr, "init");
  std::string text = sweepOnComm(o, comm, rank);
  hetcclCommDestroy(comm);
  return text;
}

void checkOptions(const SweepOptions &o) {
  if (o.sizes.empty() || o.rounds < 1)
    throw std::runtime_error("a collective sweep needs sizes and at least one round");
}

SweepResult parseSweep(const std::string &text, size_t expectedSizes) {
  SweepResult result;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word == "key") {
      in >> std::ws;
      std::getline(in, result.key);
    } else if (word == "size") {
      SizeResult size;
      in >> size.bytes >> size.iterations;
      result.sizes.push_back(size);
    } else if (word == "candidate" && !result.sizes.empty()) {
      int algo, ran;
      CandidateTime c;
      in >> algo >> ran;
      std::string times;
      std::getline(in, times);
      std::istringstream roundsIn(times);
      for (double t; roundsIn >> t;)
        c.roundSeconds.push_back(t);
      c.seconds = medianRound(c.roundSeconds);
      c.rounds = int(c.roundSeconds.size());
      c.algo = hetcclAlgo_t(algo);
      c.ran = hetcclAlgo_t(ran);
      result.sizes.back().candidates.push_back(c);
    } else {
      throw std::runtime_error("internal error: unreadable sweep output near '" + word + "'");
    }
  }
  if (result.sizes.size() != expectedSizes)
    throw std::runtime_error("internal error: the sweep reported " +
                             std::to_string(result.sizes.size()) + " sizes of " +
                             std::to_string(expectedSizes));
  return result;
}

} // namespace

const CandidateTime &SizeResult::best() const {
  // Among the candidates that ran every round: a dropped one's median is of
  // its few rounds, which the others' medians are not comparable with (one
  // lucky round made a dropped tree the record at 1 MiB, 4 ranks).
  int most = 0;
  for (const CandidateTime &c : candidates)
    if (c.algo != hetcclAlgoAuto)
      most = std::max(most, c.rounds);
  const CandidateTime *best = nullptr;
  for (const CandidateTime &c : candidates)
    if (c.algo != hetcclAlgoAuto && c.rounds == most && (!best || c.seconds < best->seconds))
      best = &c;
  if (!best)
    throw std::runtime_error("no algorithm applies to an all-reduce of " + std::to_string(bytes) +
                             " bytes");
  return *best;
}

const CandidateTime *SizeResult::fixed(hetcclAlgo_t algo) const {
  for (const CandidateTime &c : candidates)
    if (c.algo == algo)
      return &c;
  return nullptr;
}

const CandidateTime *SizeResult::autoResult() const { return fixed(hetcclAlgoAuto); }

double pairedRatio(const CandidateTime &a, const CandidateTime &b) {
  std::vector<double> ratios;
  for (size_t r = 0; r < std::min(a.roundSeconds.size(), b.roundSeconds.size()); ++r)
    if (b.roundSeconds[r] > 0)
      ratios.push_back(a.roundSeconds[r] / b.roundSeconds[r]);
  if (ratios.empty())
    return 0;
  std::sort(ratios.begin(), ratios.end());
  size_t n = ratios.size();
  return n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
}

SweepResult sweepAllReduce(const SweepOptions &o) {
  if (o.ranks < 2)
    throw std::runtime_error("a collective sweep needs at least 2 ranks, got " +
                             std::to_string(o.ranks));
  checkOptions(o);
  std::string text = runForkedRanks(o.ranks, "collective sweep",
                                    [&](const hetcclUniqueId &id, int rank) {
                                      return runRank(o, id, rank);
                                    });
  return parseSweep(text, o.sizes.size());
}

LaunchedSweepRank::LaunchedSweepRank(int64_t timeoutMs) {
  hetcclConfig_t config = HETCCL_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  hetcclComm_t comm = nullptr;
  if (hetcclCommInitFromEnv(&comm, &config) != hetcclSuccess)
    throw std::runtime_error(std::string("cannot join the launched job: ") +
                             hetcclGetLastError(nullptr));
  comm_ = comm;
  try {
    check(hetcclCommUserRank(comm, &rank_), comm, "rank");
    check(hetcclCommCount(comm, &ranks_), comm, "rank count");
  } catch (const RankFailure &e) {
    hetcclCommDestroy(comm);
    throw std::runtime_error(e.what());
  }
}

LaunchedSweepRank::~LaunchedSweepRank() { hetcclCommDestroy(comm_); }

bool LaunchedSweepRank::allReady(bool ready) {
  int32_t mine = ready ? 1 : 0, all = 0;
  if (hetcclAllReduce(&mine, &all, 1, hetcclInt32, hetcclMin, comm_) != hetcclSuccess)
    throw std::runtime_error(std::string("collective sweep, rank ") + std::to_string(rank_) + ": " +
                             hetcclGetLastError(comm_));
  return all == 1;
}

SweepResult LaunchedSweepRank::sweep(const SweepOptions &o) {
  checkOptions(o);
  if (ranks_ < 2)
    throw std::runtime_error("a collective sweep needs at least 2 ranks; the launched job has " +
                             std::to_string(ranks_));
  try {
    return parseSweep(sweepOnComm(o, comm_, rank_), o.sizes.size());
  } catch (const RankFailure &e) {
    throw std::runtime_error("collective sweep, rank " + std::to_string(rank_) + ": " + e.what());
  }
}

std::string sweepDetails(const SizeResult &size, int rounds) {
  nlohmann::ordered_json candidates = nlohmann::ordered_json::object();
  for (const CandidateTime &c : size.candidates)
    if (c.algo != hetcclAlgoAuto)
      candidates[hetcclAlgoName(c.algo)] = {{"seconds", c.seconds}, {"rounds", c.rounds}};
  nlohmann::ordered_json details = {{"dtype", "f32"},
                                    {"op", "sum"},
                                    {"calls_per_round", size.iterations},
                                    {"rounds", rounds},
                                    {"statistic", "median round's mean, slowest rank"},
                                    {"candidates", candidates}};
  return details.dump();
}

} // namespace het::tune
