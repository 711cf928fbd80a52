//===- SweepStatisticsTest.cpp - the statistics of het-tune collectives ---===//
//
// pairedRatio divides two candidates' times round by round and takes the
// median: a drift that slows every candidate of a round alike divides out,
// where the ratio of the two medians keeps it.
//
//===----------------------------------------------------------------------===//

#include "het/Tune/CollectiveSweep.h"

#include <gtest/gtest.h>

using het::tune::CandidateTime;
using het::tune::pairedRatio;

namespace {

CandidateTime timed(std::vector<double> rounds) {
  CandidateTime c;
  c.roundSeconds = std::move(rounds);
  return c;
}

TEST(PairedRatio, DriftBetweenRoundsDividesOut) {
  // b is always 2 % slower than a in its own round; the rounds drift 1-3x.
  CandidateTime a = timed({1.0, 3.0, 2.0, 1.5, 2.5});
  CandidateTime b = timed({1.02, 3.06, 2.04, 1.53, 2.55});
  EXPECT_NEAR(pairedRatio(a, b), 1 / 1.02, 1e-12);
  EXPECT_NEAR(pairedRatio(b, a), 1.02, 1e-12);
}

TEST(PairedRatio, MedianOfTheRatiosResistsOneBadRound) {
  CandidateTime a = timed({1.0, 1.0, 1.0, 1.0});
  CandidateTime b = timed({1.0, 1.0, 5.0, 1.1});
  // ratios 1, 1, 0.2, 0.909...: sorted 0.2, 0.909, 1, 1 -> (0.909 + 1) / 2
  EXPECT_NEAR(pairedRatio(a, b), (1 / 1.1 + 1) / 2, 1e-12);
}

TEST(PairedRatio, OnlyRoundsBothRanAreCompared) {
  // A candidate dropped after round 0 shares that round only.
  CandidateTime dropped = timed({4.0});
  CandidateTime kept = timed({2.0, 1.0, 1.0});
  EXPECT_DOUBLE_EQ(pairedRatio(dropped, kept), 2.0);
  EXPECT_EQ(pairedRatio(timed({}), kept), 0.0);
}

} // namespace

namespace {

TEST(SizeResult, BestIsAmongTheCandidatesThatRanEveryRound) {
  // A candidate dropped after its rounds so far carries their median, which
  // may be below the others' over all rounds; it must not be the record.
  het::tune::SizeResult size;
  CandidateTime dropped, kept, other;
  dropped.algo = hetcclAlgoTree;
  dropped.seconds = 1.0;
  dropped.rounds = 3;
  kept.algo = hetcclAlgoRing;
  kept.seconds = 2.0;
  kept.rounds = 15;
  other.algo = hetcclAlgoAuto; // never a fixed candidate
  other.seconds = 0.5;
  other.rounds = 15;
  size.candidates = {dropped, kept, other};
  EXPECT_EQ(size.best().algo, hetcclAlgoRing);
}

} // namespace
