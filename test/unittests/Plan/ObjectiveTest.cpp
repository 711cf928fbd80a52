//===- ObjectiveTest.cpp - cost, energy, spot prices, frequency scaling ---===//
#include "TestCatalog.h"

#include "het/Plan/Error.h"
#include "het/Plan/FrequencyScaling.h"
#include "het/Plan/Objective.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace het::plan;
using nlohmann::json;

namespace {

// Two "round" devices at 500 W busy, 100 W idle, and a two-layer model
// whose second layer is 4x the first.
struct PowerFixture : ::testing::Test {
  DeviceCatalog catalog;
  Cluster cluster;
  ModelDesc model;
  void SetUp() override {
    DeviceSpec d = roundDevice(10);
    d.power.tdpWatts = 500;
    d.power.idleWatts = 100;
    catalog.add(d);
    cluster = oneRoundNode(catalog, 2);
    model.name = "m";
    model.dtype = "fp32";
    model.bytesPerElement = 4;
    for (double scale : {1.0, 4.0}) {
      LayerDesc l;
      l.fwdFlops = 1e12 * scale;
      l.bwdFlops = 2e12 * scale;
      l.params = 1e6;
      l.ioBytes = l.outputBytes = 1e6;
      l.stashBytes = 1e7;
      model.layers.push_back(l);
    }
  }
  Plan twoStages(int microBatches) const {
    Plan p;
    p.globalBatch = microBatches;
    p.microBatches = microBatches;
    p.stages = {StagePlan(0, 1, 1, 0, 1), StagePlan(0, 1, 1, 1, 2)};
    return p;
  }
};

TEST_F(PowerFixture, OneDeviceComputingAllTheTimeDrawsItsBusyPower) {
  CostModel cost(model, cluster, nullptr);
  Plan p;
  p.globalBatch = 1;
  p.stages = {StagePlan(0, 1, 1, 0, 2)};
  Evaluation ev = cost.evaluate(p);
  PlanEconomics e = assessPlan(cost, p, ev, {ObjectiveKind::Energy, 0, 0});
  ASSERT_TRUE(e.powered);
  EXPECT_FALSE(e.priced);
  EXPECT_EQ(e.devices, 1);
  // No sends and no all-reduce: busy the whole iteration.
  EXPECT_NEAR(e.energyJoules, 500 * ev.iterationTime, 1e-9 * e.energyJoules);
  EXPECT_DOUBLE_EQ(e.objective, e.energyJoules);
}

TEST_F(PowerFixture, PipelineStagesPayIdlePowerWhileTheyWait) {
  cluster.groups[0].pricePerHour = 3.6; // USD 0.001 per device-second
  CostModel cost(model, cluster, nullptr);
  Plan p = twoStages(4);
  Evaluation ev = cost.evaluate(p);
  PlanEconomics e = assessPlan(cost, p, ev, {ObjectiveKind::Cost, 0, 0});
  ASSERT_TRUE(e.priced);
  EXPECT_EQ(e.devices, 2);
  EXPECT_DOUBLE_EQ(e.pricePerHour, 7.2);
  EXPECT_NEAR(e.costPerIteration, 0.002 * ev.iterationTime, 1e-12);
  EXPECT_DOUBLE_EQ(e.objective, e.costPerIteration);
  // Energy: 2 x 100 W all along, and 400 W more while each computes.
  double busy = 0;
  for (int j = 0; j < 2; ++j)
    busy += 4 * (ev.stages[j].fwd + ev.stages[j].bwd) + ev.stages[j].update;
  EXPECT_NEAR(e.energyJoules, 200 * ev.iterationTime + 400 * busy, 1e-6 * e.energyJoules);
  EXPECT_LT(e.averageWatts, 1000.0); // the first stage waits
  // Limits: a deadline and a budget it misses, each named.
  EXPECT_NE(assessPlan(cost, p, ev, {ObjectiveKind::Cost, ev.iterationTime / 2, 0})
                .violated.find("over the deadline"),
            std::string::npos);
  EXPECT_NE(assessPlan(cost, p, ev, {ObjectiveKind::Time, 0, 7.0}).violated.find("budget"),
            std::string::npos);
  EXPECT_TRUE(assessPlan(cost, p, ev, {ObjectiveKind::Time, ev.iterationTime, 7.2})
                  .violated.empty());
}

TEST_F(PowerFixture, FrequencyScalingSlowsTheStageThatWaits) {
  CostModel cost(model, cluster, nullptr);
  Plan p = twoStages(16);
  Evaluation ev = cost.evaluate(p);
  ASSERT_EQ(ev.bottleneck, 1);
  FrequencyScaling f = scaleStageFrequencies(cost, p, ev);
  EXPECT_LT(f.clocks[0], 1.0);
  EXPECT_DOUBLE_EQ(f.clocks[1], 1.0);
  EXPECT_LE(f.slowdown(), 0.01 + 1e-12);
  EXPECT_GT(f.saved(), 0.0);
  EXPECT_NEAR(f.timeBefore, ev.iterationTime, 1e-12 * ev.iterationTime);
  EXPECT_NEAR(f.energyBefore,
              assessPlan(cost, p, ev, {ObjectiveKind::Energy, 0, 0}).energyJoules,
              1e-9 * f.energyBefore);
  // The round device has no published curve: the report says so.
  EXPECT_EQ(f.assumedCurves, std::vector<std::string>{"round"});
  // No slowdown allowed: every stage keeps its clock (any lowering adds
  // to the pipeline's fill and drain).
  FrequencyScalingOptions none;
  none.maxSlowdown = 0;
  FrequencyScaling same = scaleStageFrequencies(cost, p, ev, none);
  EXPECT_EQ(same.clocks, (std::vector<double>{1.0, 1.0}));
  EXPECT_DOUBLE_EQ(same.energyAfter, same.energyBefore);
}

TEST_F(PowerFixture, KindsWithoutPowerAreLeftOutOfFrequencyScaling) {
  catalog = DeviceCatalog();
  catalog.add(roundDevice(10)); // no TDP
  cluster = oneRoundNode(catalog, 2);
  CostModel cost(model, cluster, nullptr);
  Plan p = twoStages(16);
  FrequencyScaling f = scaleStageFrequencies(cost, p, cost.evaluate(p));
  EXPECT_EQ(f.unpowered, std::vector<std::string>{"round"});
  EXPECT_TRUE(f.assumedCurves.empty());
  EXPECT_EQ(f.clocks, (std::vector<double>{1.0, 1.0}));
  EXPECT_DOUBLE_EQ(f.energyBefore, 0.0);
}

TEST(FrequencyScaling, PublishedCurvesAreInterpolated) {
  DeviceSpec d = roundDevice(10);
  d.power.tdpWatts = 400;
  d.power.idleWatts = 50;
  d.power.frequencyPower = {{0.5, 0.4}, {1.0, 1.0}};
  EXPECT_DOUBLE_EQ(busyWattsAt(d, 1.0), 400);
  EXPECT_DOUBLE_EQ(busyWattsAt(d, 0.75), 400 * 0.7);
  EXPECT_DOUBLE_EQ(busyWattsAt(d, 0.3), 400 * 0.4); // below the curve: its first point
  d.power.frequencyPower.clear();
  EXPECT_DOUBLE_EQ(busyWattsAt(d, 1.0), 400);
  EXPECT_LT(busyWattsAt(d, 0.8), 400 * 0.8); // the default: power falls faster than clock
  d.power.tdpWatts = 60;                      // never below idle
  EXPECT_DOUBLE_EQ(busyWattsAt(d, 0.5), 50);
}

TEST(Objective, IdlePowerIsPublishedOrAssumed) {
  const DeviceSpec *a100 = testCatalog().find("A100-40");
  const DeviceSpec *h100 = testCatalog().find("H100");
  ASSERT_TRUE(a100 && h100);
  EXPECT_DOUBLE_EQ(idleWatts(*a100), 65);
  EXPECT_FALSE(idleAssumed(*a100));
  EXPECT_DOUBLE_EQ(idleWatts(*h100), kDefaultIdleFraction * 700);
  EXPECT_TRUE(idleAssumed(*h100));
}

json oneGroup(const json &device) {
  return {{"name", "c"},
          {"nodes", {{{"name", "n"}, {"count", 1}, {"devices", {device}}}}}};
}

std::string parseError(const json &spec) {
  try {
    parseCluster(spec, "c.json", testCatalog());
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

TEST(Objective, GroupsArePricedByMarketOrOverride) {
  json device = {{"group", "h"}, {"kind", "H100"}, {"count", 8}};
  const DeviceSpec *h100 = testCatalog().find("H100");
  Cluster onDemand = parseCluster(oneGroup(device), "c.json", testCatalog());
  EXPECT_DOUBLE_EQ(onDemand.groups[0].pricePerHour, h100->price.onDemand);
  EXPECT_FALSE(onDemand.groups[0].spot);
  device["market"] = "spot";
  Cluster spot = parseCluster(oneGroup(device), "c.json", testCatalog());
  EXPECT_DOUBLE_EQ(spot.groups[0].pricePerHour, h100->price.spot);
  EXPECT_TRUE(spot.groups[0].spot);
  device["price_per_hour"] = 1.25;
  EXPECT_DOUBLE_EQ(parseCluster(oneGroup(device), "c.json", testCatalog()).groups[0].pricePerHour,
                   1.25);
  // Errors name the field.
  device["market"] = "reserved";
  EXPECT_EQ(parseError(oneGroup(device)),
            "c.json: nodes[0].devices[0].market: must be \"on_demand\" or \"spot\", not "
            "'reserved'");
  device["market"] = "spot";
  device["price_per_hour"] = -1;
  EXPECT_NE(parseError(oneGroup(device)).find("nodes[0].devices[0].price_per_hour"),
            std::string::npos);
  json unpriced = {{"group", "m"}, {"kind", "MI250X"}, {"count", 4}, {"market", "spot"}};
  EXPECT_NE(parseError(oneGroup(unpriced))
                .find("nodes[0].devices[0].market: kind 'MI250X' has no spot price in the device "
                      "catalog"),
            std::string::npos);
}

TEST(Objective, MissingPriceOrPowerIsNamedBeforePlanning) {
  Cluster cluster = loadCluster(sourcePath("examples/clusters/mixed-node.json"), testCatalog());
  auto error = [&](const Objective &objective) -> std::string {
    try {
      checkObjectiveInputs(cluster, objective);
    } catch (const PlanError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({ObjectiveKind::Time, 0, 0}), "");
  EXPECT_EQ(error({ObjectiveKind::Energy, 0, 0}), ""); // both kinds have a TDP
  std::string cost = error({ObjectiveKind::Cost, 0, 0});
  EXPECT_NE(cost.find("group 'mi250x': --objective cost needs a price, and kind 'MI250X' has no "
                      "on-demand price_per_hour"),
            std::string::npos)
      << cost;
  EXPECT_NE(error({ObjectiveKind::Time, 0, 100}).find("--budget needs a price"),
            std::string::npos);
  cluster.groups[1].pricePerHour = 2.0;
  EXPECT_EQ(error({ObjectiveKind::Cost, 0, 100}), "");
  DeviceSpec noPower = *cluster.groups[1].spec;
  noPower.power = {};
  cluster.groups[1].spec = &noPower;
  EXPECT_NE(error({ObjectiveKind::Energy, 0, 0})
                .find("group 'mi250x': --objective energy needs the power of every kind, and "
                      "kind 'MI250X'"),
            std::string::npos);
}

} // namespace
