//===- ClusterSpecTest.cpp - cluster spec parsing and routes --------------===//
#include "TestCatalog.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/Error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace het::plan;
using nlohmann::json;

namespace {

std::string errorOf(const json &spec) {
  try {
    parseCluster(spec, "spec.json", testCatalog());
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

TEST(ClusterSpec, ExamplesLoad) {
  for (const char *name : {"local", "mixed-node", "six-vendor-1024"}) {
    Cluster c = loadCluster(
        sourcePath(std::string("examples/clusters/") + name + ".json"),
        testCatalog());
    EXPECT_GT(c.deviceCount(), 0) << name;
  }
  Cluster big = loadCluster(
      sourcePath("examples/clusters/six-vendor-1024.json"), testCatalog());
  EXPECT_EQ(big.deviceCount(), 1024);
  EXPECT_EQ(big.groups.size(), 6u);
}

TEST(ClusterSpec, RoutesUseNodeLinksThenTheNetwork) {
  Cluster c = loadCluster(sourcePath("examples/clusters/mixed-node.json"),
                          testCatalog());
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.link(0, 0).type, "nvlink");
  EXPECT_DOUBLE_EQ(c.link(0, 1).bandwidthGbps, 256.0); // PCIe between vendors
  EXPECT_DOUBLE_EQ(c.link(0, 1).bytesPerSecond(), 32e9);
  Cluster big = loadCluster(
      sourcePath("examples/clusters/six-vendor-1024.json"), testCatalog());
  EXPECT_EQ(big.link(0, 1).type, big.network.type); // different nodes
}

TEST(ClusterSpec, ErrorsNameTheField) {
  json base = {
      {"name", "x"},
      {"nodes",
       {{{"name", "n"},
         {"count", 1},
         {"devices", {{{"group", "g"}, {"kind", "A100-80"}, {"count", 2}}}}}}}};
  EXPECT_EQ(errorOf(base), "");

  json zero = base;
  zero["nodes"][0]["devices"][0]["count"] = 0;
  EXPECT_EQ(errorOf(zero),
            "spec.json: nodes[0].devices[0].count: must be >= 1, not 0");

  json kind = base;
  kind["nodes"][0]["devices"][0]["kind"] = "GPU-9000";
  EXPECT_NE(errorOf(kind).find(
                "nodes[0].devices[0].kind: unknown device kind 'GPU-9000'"),
            std::string::npos);

  json noNodes = base;
  noNodes["nodes"] = json::array();
  EXPECT_EQ(errorOf(noNodes), "spec.json: nodes: must not be empty");

  json twoNodes = base;
  twoNodes["nodes"][0]["count"] = 2;
  EXPECT_EQ(errorOf(twoNodes),
            "spec.json: network: missing, but group 'g' spans 2 nodes");

  json badLink = base;
  badLink["nodes"][0]["links"] = {{{"between", {"g", "g"}},
                                   {"type", "nvlink"},
                                   {"bandwidth_gbps", 0},
                                   {"latency_us", 1}}};
  EXPECT_EQ(errorOf(badLink),
            "spec.json: nodes[0].links[0].bandwidth_gbps: must be > 0, not 0");

  json nicAlone = base;
  nicAlone["nodes"][0]["nic_gbps"] = 100;
  EXPECT_EQ(errorOf(nicAlone),
            "spec.json: nodes[0].nic_gbps: needs a \"network\" to connect the nodes");

  json net = base;
  net["network"] = {{"type", "eth"}, {"bandwidth_gbps", 100}, {"latency_us", 5}};
  EXPECT_EQ(errorOf(net), "");
  json zeroNic = net;
  zeroNic["nodes"][0]["nic_gbps"] = 0;
  EXPECT_EQ(errorOf(zeroNic), "spec.json: nodes[0].nic_gbps: must be > 0, not 0");
  json under = net;
  under["network"]["oversubscription"] = 0.5;
  EXPECT_EQ(errorOf(under), "spec.json: network.oversubscription: must be >= 1 (uplink "
                            "capacity divides by it between zones)");
  json zones = net;
  zones["nodes"][0]["zone"] = "east";
  json pair = {{"between", {"east", "west"}},
               {"type", "wan"},
               {"bandwidth_gbps", 4},
               {"latency_us", 2000}};
  zones["network"]["zones"] = {pair};
  EXPECT_EQ(errorOf(zones), "spec.json: network.zones[0].between: names zone 'west', which no "
                            "node template is in");
  zones["nodes"][0]["zone"] = "west";
  pair["between"] = {"west", "west"};
  zones["network"]["zones"] = {pair, pair};
  EXPECT_EQ(errorOf(zones),
            "spec.json: network.zones[1].between: zones 'west' and 'west' are given twice");
  pair["between"] = {"west"};
  zones["network"]["zones"] = {pair};
  EXPECT_EQ(errorOf(zones), "spec.json: network.zones[0].between: must be two zone names");

  json noName = base;
  noName.erase("name");
  EXPECT_EQ(errorOf(noName), "spec.json: name: missing");
}

} // namespace
