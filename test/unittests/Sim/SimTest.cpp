//===- SimTest.cpp - het-sim's iterations, failures and utilization -------===//
#include "../Plan/TestCatalog.h"
#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Sim/IterationSampler.h"
#include "het/Sim/Reliability.h"
#include "het/Sim/Utilization.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace het::plan;
using namespace het::sim;

namespace {

// Four identical devices on one node, a four-layer model of round numbers.
struct SimFixture : ::testing::Test {
  DeviceCatalog catalog;
  Cluster cluster;
  ModelDesc model;
  void SetUp() override {
    catalog.add(roundDevice(100));
    cluster = oneRoundNode(catalog, 4);
    model.name = "m";
    for (int i = 0; i < 4; ++i) {
      LayerDesc l;
      l.fwdFlops = 1e11;
      l.bwdFlops = 2e11;
      l.params = 1e6;
      l.ioBytes = 1e6;
      l.outputBytes = 1e7;
      l.stashBytes = 1e6;
      model.layers.push_back(l);
    }
  }
  // Four stages of one device, 8 micro-batches of 1.
  Plan pipeline() const {
    Plan p;
    p.globalBatch = 8;
    p.microBatches = 8;
    for (int j = 0; j < 4; ++j)
      p.stages.push_back(StagePlan(0, 1, 1, j, j + 1));
    return p;
  }
};

TEST_F(SimFixture, WithoutVariationEveryIterationIsTheReplay) {
  CostModel cost(model, cluster, nullptr);
  Plan plan = pipeline();
  Evaluation ev = cost.evaluate(plan);
  Variability none;
  none.noise = 0;
  none.stragglerProbability = 0;
  none.linkQueues = false;
  IterationStats s = sampleIterations(cost, plan, ev, 5, none);
  double replay = simulateIteration(cost, plan, ev).end;
  for (double t : s.times)
    EXPECT_DOUBLE_EQ(t, replay);
  // The replay and the closed form agree within the sends the closed form
  // charges to every stage's slot (3 stages send here).
  EXPECT_LE(replay, ev.iterationTime + 1e-12);
  EXPECT_GT(replay, 0.95 * ev.iterationTime);
}

TEST_F(SimFixture, OneSeedOneRun) {
  CostModel cost(model, cluster, nullptr);
  Plan plan = pipeline();
  Evaluation ev = cost.evaluate(plan);
  Variability v;
  v.noise = 0.05;
  v.stragglerProbability = 0.05;
  IterationStats a = sampleIterations(cost, plan, ev, 20, v);
  IterationStats b = sampleIterations(cost, plan, ev, 20, v);
  EXPECT_EQ(a.times, b.times);
  // Each iteration replays on its own.
  EXPECT_DOUBLE_EQ(replayIteration(cost, plan, ev, 7, v).end, a.times[7]);
  v.seed = 2;
  EXPECT_NE(sampleIterations(cost, plan, ev, 20, v).times, a.times);
  EXPECT_LE(a.min, a.p50);
  EXPECT_LE(a.p50, a.p90);
  EXPECT_LE(a.p99, a.max);
}

TEST_F(SimFixture, StragglersSlowTheirStage) {
  for (auto &l : model.layers)
    l.outputBytes = 0; // compute only
  CostModel cost(model, cluster, nullptr);
  Plan plan = pipeline();
  Evaluation ev = cost.evaluate(plan);
  Variability always;
  always.noise = 0;
  always.stragglerProbability = 1;
  always.stragglerSlowdown = 2;
  IterationStats s = sampleIterations(cost, plan, ev, 3, always);
  double compute = simulateIteration(cost, plan, ev).end - ev.stages[0].update;
  // Every stage straggles: every pass takes twice as long; the optimizer not.
  EXPECT_NEAR(s.mean, 2 * compute + ev.stages[0].update, 1e-9);
  EXPECT_EQ(s.straggled, 3);
}

TEST_F(SimFixture, QueuedSendsNeverArriveEarlier) {
  CostModel cost(model, cluster, nullptr);
  Plan plan = pipeline();
  Evaluation ev = cost.evaluate(plan);
  IterationVariation queued;
  queued.linkQueues = true;
  EXPECT_GE(simulateIteration(cost, plan, ev, queued).end, simulateIteration(cost, plan, ev).end);
}

TEST_F(SimFixture, UtilizationOfOneDeviceIsOne) {
  CostModel cost(model, cluster, nullptr);
  Plan plan;
  plan.globalBatch = 4;
  plan.microBatches = 1;
  plan.stages.push_back(StagePlan(0, 1, 1, 0, 4));
  Evaluation ev = cost.evaluate(plan);
  Utilization u = utilization(cost, plan, ev.iterationTime);
  EXPECT_NEAR(u.ratio, 1.0, 1e-9);
  // Three devices of the group idle: a quarter of the cluster's capacity.
  EXPECT_NEAR(u.clusterRatio, 0.25, 1e-9);
}

TEST(Reliability, YoungAndDaly) {
  // 10 s stall, MTBF 50 h: sqrt(2 * 10 * 180000) = 1897.4 s.
  EXPECT_NEAR(youngInterval(10, 180000), std::sqrt(3.6e6), 1e-9);
  double young = std::sqrt(3.6e6);
  EXPECT_NEAR(dalyInterval(10, 180000),
              young * (1 + std::sqrt(10.0 / 360000) / 3 + 10.0 / (18 * 180000)) - 10, 1e-9);
  EXPECT_EQ(dalyInterval(500, 200), 200); // stall over twice the MTBF
}

TEST(Reliability, WithoutFailuresOnlyStallsCost) {
  std::vector<double> times(10, 1.0);
  FailureModel fm;
  fm.checkpointStallSeconds = 1; // one second per 9 iterations
  RunOutcome r = simulateRun(times, fm, 9, 1, 2, 1);
  EXPECT_EQ(r.failures, 0);
  EXPECT_NEAR(r.goodput, 0.9, 0.01);
  EXPECT_NEAR(simulateRun(times, fm, 0, 1, 2, 1).goodput, 1.0, 1e-3);
}

TEST(Reliability, GoodputMatchesTheFirstOrderLoss) {
  // A checkpoint after every 1 s iteration, free and at once durable;
  // failures at 2 per hour, each costing 60 s down plus half an iteration
  // on average: goodput ~ 1 - 2 * 60.5 / 3600.
  std::vector<double> times(4, 1.0);
  FailureModel fm;
  fm.failuresPerHour = 2;
  fm.detectSeconds = 10;
  fm.restartSeconds = 50;
  RunOutcome r = simulateRun(times, fm, 1, 200, 10, 3);
  EXPECT_NEAR(r.goodput, 1 - 2 * 60.5 / 3600, 0.003);
  EXPECT_NEAR(r.failures / 200, 2, 0.25); // about 2 per hour of uptime
}

TEST(Reliability, TheSimulatedBestIntervalIsNearYoungs) {
  // Stall 5 s, MTBF 1 h, 10 s iterations, durable at once: Young says
  // sqrt(2 * 5 * 3600) = 190 s = 19 iterations.
  std::vector<double> times(8, 10.0);
  FailureModel fm;
  fm.failuresPerHour = 1;
  fm.checkpointStallSeconds = 5;
  std::vector<IntervalChoice> sweep = sweepCheckpointInterval(times, fm, 500, 8, 5, {19});
  ASSERT_FALSE(sweep.empty());
  EXPECT_GE(sweep.front().every, 12);
  EXPECT_LE(sweep.front().every, 30);
  for (const IntervalChoice &c : sweep)
    EXPECT_LE(c.outcome.goodput, sweep.front().outcome.goodput);
  // Checkpoints that take 400 s to become durable lose more work, and none
  // starts while the previous one is written: at most one per 400 s.
  fm.checkpointWriteSeconds = 400;
  EXPECT_LT(sweepCheckpointInterval(times, fm, 500, 8, 5, {19}).front().outcome.goodput,
            sweep.front().outcome.goodput);
  RunOutcome eager = simulateRun(times, fm, 1, 500, 8, 5);
  EXPECT_LE(eager.checkpointSeconds, 5 * (500 * 3600 / 405.0) + 5);
  EXPECT_GT(eager.checkpointSeconds, 5 * (500 * 3600 / 430.0) * 0.9);
}

} // namespace
