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
