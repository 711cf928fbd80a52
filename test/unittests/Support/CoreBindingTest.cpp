//===- CoreBindingTest.cpp - which CPUs a rank runs on --------------------===//
#include "het/Support/CoreBinding.h"

#include <gtest/gtest.h>

using namespace het::support;

TEST(CoreBinding, RanksThatOutnumberTheCpusGoRoundRobin) {
  std::vector<int> cpus = {0, 2, 5};
  EXPECT_EQ(coresOfRank(cpus, 0, 4), std::vector<int>{0});
  EXPECT_EQ(coresOfRank(cpus, 1, 4), std::vector<int>{2});
  EXPECT_EQ(coresOfRank(cpus, 2, 4), std::vector<int>{5});
  EXPECT_EQ(coresOfRank(cpus, 3, 4), std::vector<int>{0});
}

TEST(CoreBinding, FewerRanksGetAnEqualBlockEach) {
  std::vector<int> cpus = {0, 1, 2, 3, 4};
  EXPECT_EQ(coresOfRank(cpus, 0, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(coresOfRank(cpus, 1, 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(coresOfRank(cpus, 0, 1), cpus);
  EXPECT_TRUE(coresOfRank(cpus, 2, 2).empty()); // no such rank
  EXPECT_TRUE(coresOfRank({}, 0, 2).empty());
}

TEST(CoreBinding, CpuListsRoundTripAndMalformedOnesAreRefused) {
  EXPECT_EQ(formatCpuList({0, 1, 7}), "0,1,7");
  EXPECT_EQ(parseCpuList("0,1,7"), (std::vector<int>{0, 1, 7}));
  EXPECT_TRUE(parseCpuList("0,,1").empty());
  EXPECT_TRUE(parseCpuList("1,0").empty()); // not ascending
  EXPECT_TRUE(parseCpuList("0,x").empty());
  EXPECT_TRUE(parseCpuList("-1").empty());
  EXPECT_TRUE(parseCpuList("99999").empty());
}

TEST(CoreBinding, ThisProcessMayRunSomewhere) {
  std::vector<int> cpus = allowedCpus();
  ASSERT_FALSE(cpus.empty());
  // Binding to what it has already changes nothing and succeeds.
  EXPECT_EQ(bindProcess(cpus), "");
  EXPECT_EQ(allowedCpus(), cpus);
  EXPECT_NE(bindProcess({}), "");
}
