//===- SharedHostScheduleTest.cpp - 1F1B on shared cores ------------------===//

#include "het/Plan/SharedHostSchedule.h"

#include <gtest/gtest.h>

using namespace het::plan;

namespace {

// Two stages of one rank each; forward 1 s, backward 2 s per micro-batch.
std::vector<SharedHostStage> twoStages(double message = 0) {
  SharedHostStage s;
  s.fwd = {1};
  s.bwd = {2};
  s.messageToNext = message;
  return {s, s};
}

} // namespace

TEST(SharedHostSchedule, WithACorePerRankItIsTheClosedForm) {
  // 1F1B: sum of the stage times plus (m - 1) times the slowest: 3 + 3 + 3.
  EXPECT_NEAR(simulateSharedHost(twoStages(), 2, 2), 9.0, 1e-9);
  EXPECT_NEAR(simulateSharedHost(twoStages(), 2, 8), 9.0, 1e-9);
  // A message across the boundary each way per micro-batch on the
  // critical path: F0 out, and the last backward's gradient back, plus the
  // waits they cause in between.
  EXPECT_GT(simulateSharedHost(twoStages(0.5), 2, 2), 9.0 + 2 * 0.5 - 1e-9);
}

TEST(SharedHostSchedule, OneCoreRunsAllTheWorkInTurn) {
  // 2 ranks x 2 micro-batches x 3 s on one core, never idle: 12 s.
  EXPECT_NEAR(simulateSharedHost(twoStages(), 2, 1), 12.0, 1e-9);
}

TEST(SharedHostSchedule, ReplicasShareTheCoresTheyOutnumber) {
  // One stage of four replicas, 1 + 1 s per micro-batch, two micro-batches,
  // two cores: 4 ranks x 4 s of work over 2 cores.
  SharedHostStage s;
  s.fwd = {1, 1, 1, 1};
  s.bwd = {1, 1, 1, 1};
  EXPECT_NEAR(simulateSharedHost({s}, 2, 2), 8.0, 1e-9);
  EXPECT_NEAR(simulateSharedHost({s}, 2, 4), 4.0, 1e-9);
}

TEST(SharedHostSchedule, FactorsScaleEachPassAndPassesAreReported) {
  // Doubling every pass's work doubles the makespan; slowing only stage 1's
  // backwards by 3x lengthens it by what lies on the critical path.
  std::vector<SharedHostPass> passes;
  double base = simulateSharedHost(twoStages(), 2, 1, {}, &passes);
  ASSERT_EQ(passes.size(), 8u); // 2 ranks x 2 micro-batches x (F, B)
  double doubled = simulateSharedHost(
      twoStages(), 2, 1, [](int, bool, int) { return 2.0; });
  EXPECT_NEAR(doubled, 2 * base, 1e-9);
  // One core: the work is 12 s plus stage 1's backwards slowed by 2 x 2 s
  // each, all of it in turn.
  double slowed = simulateSharedHost(
      twoStages(), 2, 1, [](int stage, bool backward, int) {
        return stage == 1 && backward ? 3.0 : 1.0;
      });
  EXPECT_NEAR(slowed, 12.0 + 2 * 4.0, 1e-9);
  // A rank runs one pass at a time, in its 1F1B order, and every pass
  // took at least its work.
  for (const SharedHostPass &p : passes) {
    EXPECT_GE(p.end - p.start, (p.backward ? 2.0 : 1.0) - 1e-9);
    for (const SharedHostPass &q : passes) {
      if (&p != &q && p.stage == q.stage && p.rank == q.rank) {
        EXPECT_TRUE(p.end <= q.start + 1e-9 || q.end <= p.start + 1e-9);
      }
    }
  }
}

TEST(SharedHostSchedule, RanksShareTheCoreTheyAreBoundTo) {
  // Three replicas of 1 + 1 s on two cores: ranks 0 and 2 share core 0
  // (4 s), rank 1 has core 1 to itself (2 s). Spread over both cores the
  // work would take 3 s; bound, the step takes 4.
  SharedHostStage s;
  s.fwd = {1, 1, 1};
  s.bwd = {1, 1, 1};
  EXPECT_NEAR(simulateSharedHost({s}, 1, 2), 4.0, 1e-9);
}

TEST(SharedHostSchedule, AStagesSyncRunsBesideTheOthersBackwards) {
  // The last stage's sync and update (1.5 s) start after its last backward
  // (at 7 s) while stage 0 runs its own (7-9 s): with a core each it is
  // hidden (9 s, where pipeline + sync would say 10.5); on one core it
  // is work like any other (12 + 1.5 s).
  std::vector<SharedHostStage> stages = twoStages();
  stages[1].finish = 1.5;
  std::vector<SharedHostPass> passes;
  EXPECT_NEAR(simulateSharedHost(stages, 2, 2, {}, &passes), 9.0, 1e-9);
  ASSERT_EQ(passes.size(), 9u);
  EXPECT_EQ(passes[passes.size() - 2].micro, -1); // the sync, before stage 0's last backward ends
  EXPECT_NEAR(simulateSharedHost(stages, 2, 1), 13.5, 1e-9);
  // Its factor is asked for with micro-batch -1.
  EXPECT_NEAR(simulateSharedHost(stages, 2, 1,
                                 [](int, bool, int micro) { return micro < 0 ? 2.0 : 1.0; }),
              15.0, 1e-9);
}
