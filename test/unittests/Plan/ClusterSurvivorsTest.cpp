//===- ClusterSurvivorsTest.cpp - a cluster spec without lost devices -----===//
#include "TestCatalog.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/ClusterSurvivors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace het::plan;
using nlohmann::json;

namespace {

json example(const std::string &name) {
  std::ifstream in(sourcePath("examples/clusters/" + name + ".json"));
  return json::parse(in);
}

TEST(ClusterSurvivors, RanksAreNumberedGroupByGroup) {
  Cluster c = parseCluster(example("local-two-kinds"), "local-two-kinds.json", testCatalog());
  EXPECT_EQ(rankGroups(c), (std::vector<std::string>{"onednn", "onednn", "mlir", "mlir"}));
}

TEST(ClusterSurvivors, AWholeGroupGoesWithItsLinks) {
  json left = withoutDevices(example("local-two-kinds"), {{"mlir", 2}});
  Cluster c = parseCluster(left, "left.json", testCatalog());
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].name, "onednn");
  EXPECT_EQ(c.deviceCount(), 2);
  for (const json &link : left["nodes"][0]["links"])
    for (const json &end : link["between"])
      EXPECT_EQ(end, "onednn");
}

TEST(ClusterSurvivors, OneDeviceOfAGroup) {
  json left = withoutDevices(example("local-two-kinds"), {{"onednn", 1}});
  Cluster c = parseCluster(left, "left.json", testCatalog());
  EXPECT_EQ(rankGroups(c), (std::vector<std::string>{"onednn", "mlir", "mlir"}));
}

TEST(ClusterSurvivors, OnlyOneOfIdenticalNodesLosesDevices) {
  json spec = example("six-vendor-1024");
  Cluster before = parseCluster(spec, "six.json", testCatalog());
  std::string group = before.groups[0].name;
  json left = withoutDevices(spec, {{group, 3}});
  Cluster after = parseCluster(left, "left.json", testCatalog());
  EXPECT_EQ(after.deviceCount(), before.deviceCount() - 3);
  int devices = 0, degraded = -1;
  for (const DeviceGroup &g : after.groups) {
    if (g.name == group || g.name == group + "-degraded")
      devices += g.count();
    if (g.name == group + "-degraded")
      degraded = g.count();
  }
  EXPECT_EQ(devices, before.groups[0].count() - 3);
  EXPECT_EQ(degraded, before.groups[0].devicesPerNode - 3);
  // A second loss on the intact nodes makes another degraded node.
  json again = withoutDevices(left, {{group, 1}});
  Cluster twice = parseCluster(again, "again.json", testCatalog());
  EXPECT_EQ(twice.deviceCount(), before.deviceCount() - 4);
  bool second = false;
  for (const DeviceGroup &g : twice.groups)
    second = second || g.name == group + "-degraded-2";
  EXPECT_TRUE(second);
}

TEST(ClusterSurvivors, LossesSpanningSeveralIdenticalNodes) {
  json spec = example("six-vendor-1024");
  Cluster before = parseCluster(spec, "six.json", testCatalog());
  const DeviceGroup &g = before.groups[0];
  int perNode = g.devicesPerNode;
  // More than one node's devices: one node goes whole, another loses one.
  json left = withoutDevices(spec, {{g.name, perNode + 1}});
  Cluster after = parseCluster(left, "left.json", testCatalog());
  EXPECT_EQ(after.deviceCount(), before.deviceCount() - perNode - 1);
  int intact = 0, degraded = 0;
  for (const DeviceGroup &h : after.groups) {
    if (h.name == g.name)
      intact = h.count();
    if (h.name == g.name + "-degraded")
      degraded = h.count();
  }
  EXPECT_EQ(intact, (g.nodes - 2) * perNode);
  EXPECT_EQ(degraded, perNode - 1);
}

// het-run --elastic counts losses by the groups of the spec the job
// started with, whatever the degraded copies are called.
TEST(ClusterSurvivors, DegradedGroupsMapToTheirOriginals) {
  json spec = example("six-vendor-1024");
  std::string group = parseCluster(spec, "six.json", testCatalog()).groups[0].name;
  json again = withoutDevices(withoutDevices(spec, {{group, 3}}), {{group, 1}});
  int seen = 0;
  for (const DeviceGroup &g : parseCluster(again, "again.json", testCatalog()).groups)
    if (g.name.rfind(group, 0) == 0) {
      EXPECT_EQ(originalGroup(spec, g.name), group) << g.name;
      ++seen;
    }
  EXPECT_EQ(seen, 3); // the intact nodes, -degraded and -degraded-2
  for (const std::string &bad : std::vector<std::string>{"nope", group + "-degradedX", group + "-degraded-", "x-degraded"})
    EXPECT_THROW(originalGroup(spec, bad), std::runtime_error) << bad;
}

TEST(ClusterSurvivors, MoreThanAGroupHasIsAnError) {
  try {
    withoutDevices(example("local-two-kinds"), {{"mlir", 3}});
    FAIL() << "no error";
  } catch (const std::runtime_error &e) {
    EXPECT_STREQ(e.what(), "cannot take 3 devices out of group 'mlir': it has only 2");
  }
}

} // namespace
