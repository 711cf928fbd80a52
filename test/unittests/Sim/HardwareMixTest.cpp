//===- HardwareMixTest.cpp - inventories and what to rent from them --------===//
#include "../Plan/TestCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/Inventory.h"
#include "het/Sim/HardwareMix.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

using namespace het::plan;
using namespace het::sim;
using nlohmann::json;

namespace {

// Two offers: up to 2 nodes of 8 A100-40 and 2 nodes of 8 L4, both on
// either market at the catalog's (GCP's) prices.
json offer() {
  return {{"name", "offer"},
          {"nodes",
           {{{"name", "a100"},
             {"count", 2},
             {"zone", "east"},
             {"devices", {{{"group", "a100"}, {"kind", "A100-40"}, {"count", 8}}}},
             {"links",
              {{{"between", {"a100", "a100"}},
                {"type", "nvlink"},
                {"bandwidth_gbps", 4800.0},
                {"latency_us", 2.0}}}}},
            {{"name", "l4"},
             {"count", 2},
             {"zone", "west"},
             {"devices", {{{"group", "l4"}, {"kind", "L4"}, {"count", 8}}}}}}},
          {"network",
           {{"type", "ethernet"},
            {"bandwidth_gbps", 200.0},
            {"latency_us", 10.0},
            {"zones",
             {{{"between", {"east", "west"}},
               {"type", "wan"},
               {"bandwidth_gbps", 50.0},
               {"latency_us", 500.0}}}}}}};
}

std::string writeTemp(const json &j) {
  static int n = 0;
  std::string path = ::testing::TempDir() + "/inventory-" + std::to_string(n++) + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

std::string loadError(const json &j) {
  try {
    loadInventory(writeTemp(j), testCatalog());
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

TEST(Inventory, OffersAndTheirMarkets) {
  Inventory inv = loadInventory(writeTemp(offer()), testCatalog());
  ASSERT_EQ(inv.offers.size(), 2u);
  const DeviceSpec *a100 = testCatalog().find("A100-40");
  EXPECT_EQ(inv.offers[0].maxNodes, 2);
  EXPECT_EQ(inv.offers[0].devicesPerNode, 8);
  EXPECT_TRUE(inv.offers[0].onDemand);
  EXPECT_TRUE(inv.offers[0].spot); // the catalog has a spot price
  EXPECT_DOUBLE_EQ(inv.offers[0].spotPrice, a100->price.spot);
  // A mix: 2 A100 nodes on spot, no L4: the route between zones goes too.
  json spec = inv.clusterSpec({2, 0}, {true, false});
  Cluster c = parseCluster(spec, "mix.json", testCatalog());
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].nodes, 2);
  EXPECT_TRUE(c.groups[0].spot);
  EXPECT_DOUBLE_EQ(c.groups[0].pricePerHour, a100->price.spot);
  EXPECT_TRUE(spec["network"]["zones"].empty());
}

TEST(Inventory, BadOffersAreNamed) {
  json j = offer();
  j["nodes"][0]["devices"].push_back({{"group", "x"}, {"kind", "T4"}, {"count", 1}});
  EXPECT_NE(loadError(j).find("nodes[0].devices: an inventory's node template offers one kind"),
            std::string::npos);
  j = offer();
  j["nodes"][1]["devices"][0]["market"] = "spot";
  EXPECT_NE(loadError(j).find("nodes[1].devices[0].market: an inventory lists the markets"),
            std::string::npos);
  j = offer();
  j["nodes"][1]["devices"][0]["markets"] = {"spot", "reserved"};
  EXPECT_NE(loadError(j).find("nodes[1].devices[0].markets[1]: must be"), std::string::npos);
  j = offer();
  j["nodes"][1]["devices"][0]["kind"] = "MI250X"; // no price at all
  EXPECT_NE(loadError(j).find("kind 'MI250X' has no on-demand price"), std::string::npos);
  j["nodes"][1]["devices"][0]["markets"] = {"spot"};
  EXPECT_NE(loadError(j).find("spot is offered but kind 'MI250X' has no spot price"),
            std::string::npos);
  j["nodes"][1]["devices"][0]["spot_price_per_hour"] = 1.0;
  EXPECT_EQ(loadError(j), "");
  j["nodes"][1]["devices"][0]["kind"] = "NoSuchChip";
  EXPECT_NE(loadError(j).find("unknown device kind 'NoSuchChip'"), std::string::npos);
}

struct MixFixture : ::testing::Test {
  ModelDesc model = makeGptModel("gpt-small", 12, 768, 12, 1024, 50257);
  MixOptions options;
  void SetUp() override {
    options.planner.globalBatch = 64;
    options.planner.maxMicroBatches = 16;
    options.planner.tensorParallel = {1, 2};
    options.setup = TrainingSetup::of(model);
    options.trials = 4;
  }
  MixResult recommend(const json &inventory, double deadline) {
    options.planner.objective.deadlineSeconds = deadline;
    return recommendMix(loadInventory(writeTemp(inventory), testCatalog()), model, testCatalog(),
                        options);
  }
};

TEST_F(MixFixture, CheapestMixMeetsTheDeadlineAndSpotWinsWhenRarelyPreempted) {
  // The fastest possible iteration: everything on demand, planned for time.
  Inventory inv = loadInventory(writeTemp(offer()), testCatalog());
  Cluster all = parseCluster(inv.clusterSpec({2, 2}, {false, false}), "all", testCatalog());
  CostModel cost(model, all, nullptr, options.setup);
  PlanResult fastest = planPipeline(cost, options.planner);
  ASSERT_FALSE(fastest.plans.empty());
  const double deadline = 3 * fastest.plans[0].evaluation.iterationTime;

  MixResult r = recommend(offer(), deadline);
  ASSERT_FALSE(r.best.empty());
  for (const MixChoice &c : r.best) {
    EXPECT_LE(c.expectedSeconds, deadline * (1 + 1e-9));
    EXPECT_GT(c.goodput, 0.5);
    EXPECT_LE(c.goodput, 1.0);
  }
  for (size_t i = 1; i < r.best.size(); ++i)
    EXPECT_LE(r.best[i - 1].expectedCost, r.best[i].expectedCost);
  // Spot at 40% of on-demand, preempted once in 140 days per node: spot wins.
  EXPECT_TRUE(r.best.front().spot) << r.best.front().description;
  ASSERT_FALSE(r.onDemandOnly.empty());
  EXPECT_FALSE(r.onDemandOnly.front().spot);
  EXPECT_LT(r.best.front().expectedCost, r.onDemandOnly.front().expectedCost);
  EXPECT_LE(r.planned, r.mixes);
  std::printf("%ld mixes, %ld planned, %.2f s: %s, USD %.3g per iteration (on demand: %s, USD "
              "%.3g)\n",
              r.mixes, r.planned, r.seconds, r.best.front().description.c_str(),
              r.best.front().expectedCost, r.onDemandOnly.front().description.c_str(),
              r.onDemandOnly.front().expectedCost);

  // The bounds only skip mixes that cannot win: planning every mix finds
  // the same best, and no mix's plan beats its bounds (both markets, and
  // the evaluated iteration without preemptions).
  options.keep = 1000;
  options.prune = false;
  MixResult every = recommend(offer(), deadline);
  ASSERT_FALSE(every.best.empty());
  EXPECT_DOUBLE_EQ(every.best.front().expectedCost, r.best.front().expectedCost);
  EXPECT_EQ(every.planned, every.mixes);
  double tightest = 0;
  for (const MixChoice &c : every.best) {
    tightest = std::max(tightest, c.costBound / c.economics.costPerIteration);
    EXPECT_LE(c.costBound, c.economics.costPerIteration * (1 + 1e-9)) << c.description;
    EXPECT_LE(c.timeBound, c.evaluation.iterationTime * (1 + 1e-9)) << c.description;
  }
  std::printf("bounds: %ld of %ld mixes planned (%ld without pruning); cost bound at most "
              "%.2f of the plan's cost\n",
              r.planned, r.mixes, every.planned, tightest);
  options.prune = true;
  options.keep = 50;
  MixResult wide = recommend(offer(), deadline);
  ASSERT_FALSE(wide.best.empty());
  EXPECT_DOUBLE_EQ(wide.best.front().expectedCost, r.best.front().expectedCost);
  EXPECT_GE(wide.planned, r.planned);
  // Spot offers only: nothing on demand to compare with.
  json spotOnly = offer();
  for (auto &node : spotOnly["nodes"])
    node["devices"][0]["markets"] = {"spot"};
  options.keep = 5;
  MixResult onlySpot = recommend(spotOnly, deadline);
  ASSERT_FALSE(onlySpot.best.empty());
  EXPECT_TRUE(onlySpot.onDemandOnly.empty());

  // Preempted every few minutes, spot capacity is worth less than on demand.
  options.failures.preemptionsPerNodeHour = 20;
  MixResult stormy = recommend(offer(), deadline);
  ASSERT_FALSE(stormy.best.empty());
  EXPECT_FALSE(stormy.best.front().spot) << stormy.best.front().description;

  // A deadline nothing meets.
  MixResult none = recommend(offer(), fastest.plans[0].evaluation.iterationTime / 10);
  EXPECT_TRUE(none.best.empty());
}

} // namespace
