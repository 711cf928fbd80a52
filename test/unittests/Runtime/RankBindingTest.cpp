//===- RankBindingTest.cpp - a pipeline rank's CPUs by its place ----------===//
#include "Runtime/RankBinding.h"

#include <gtest/gtest.h>

using namespace het::rt;

namespace {

ReplicaGroupInfo replicas(const std::string &group, int count, int64_t samples) {
  ReplicaGroupInfo g;
  g.group = group;
  g.count = count;
  g.samples = samples;
  return g;
}

} // namespace

TEST(RankBinding, WorkingRanksStageByStageThenIdleOnes) {
  // het-run --cluster numbers the ranks group by group: onednn 0-1, mlir
  // 2-3, idle 4. Two mixed stages of one onednn and one mlir replica each:
  // stage 0 is ranks 0 and 2, stage 1 ranks 1 and 3; bound by place they
  // come 0, 2, 1, 3 (a stage's replicas on different cores of two), then
  // the idle rank 4.
  ModelInfo info;
  info.microBatches = 1;
  info.globalBatch = 8;
  info.groups = {{"onednn", 2}, {"mlir", 3}};
  for (int j = 0; j < 2; ++j) {
    StageInfo st;
    st.name = "s" + std::to_string(j);
    st.replicaGroups = {replicas("onednn", 1, 4), replicas("mlir", 1, 4)};
    info.stages.push_back(st);
  }
  PipelineLayout layout;
  std::string error;
  ASSERT_TRUE(PipelineLayout::build(info, /*byGroup=*/true, layout, error)) << error;
  ASSERT_EQ(layout.ranks(), 5);
  EXPECT_EQ(bindingIndex(layout, 0), 0);
  EXPECT_EQ(bindingIndex(layout, 2), 1);
  EXPECT_EQ(bindingIndex(layout, 1), 2);
  EXPECT_EQ(bindingIndex(layout, 3), 3);
  EXPECT_EQ(bindingIndex(layout, 4), 4);
}
