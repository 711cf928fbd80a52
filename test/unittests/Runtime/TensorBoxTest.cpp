//===- TensorBoxTest.cpp - parts of tensors and copies between them -------===//
//
// A replica's block of rows of a tensor-parallel part split along axis 1
// (ZeRO under tensor parallelism): its box, how a checkpoint records it,
// and a copy into the whole and back that moves exactly its elements.
//
//===----------------------------------------------------------------------===//

#include "Runtime/TensorBox.h"

#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>

using namespace het::rt;

TEST(TensorBox, ABlockOfAPartIsRecordedAsItsColumnsAndRows) {
  std::vector<int64_t> whole = {6, 8};
  Box box{{2, 4}, {5, 8}}; // rows 2..5 of columns 4..8
  het::ckpt::Shard shard = shardOf(box, whole);
  EXPECT_EQ(shard.axis, 1);
  EXPECT_EQ(shard.begin, 4);
  EXPECT_EQ(shard.end, 8);
  EXPECT_TRUE(shard.hasRows());
  EXPECT_EQ(shard.rowBegin, 2);
  EXPECT_EQ(shard.rowEnd, 5);
  EXPECT_EQ(boxOf(box.shape(), shard), box);

  // One axis: no rows; all of it: no shard.
  het::ckpt::Shard rows = shardOf(Box{{2, 0}, {5, 8}}, whole);
  EXPECT_EQ(rows.axis, 0);
  EXPECT_FALSE(rows.hasRows());
  EXPECT_FALSE(shardOf(Box::whole(whole), whole).present());
  // Cut along two axes neither of which is the rows: not recordable.
  EXPECT_THROW(shardOf(Box{{0, 1, 1}, {2, 2, 2}}, {2, 3, 3}), std::logic_error);
}

TEST(TensorBox, CopiesMoveExactlyTheRegion) {
  std::vector<int64_t> whole = {6, 8};
  std::vector<float> values(48);
  std::iota(values.begin(), values.end(), 0.0f);
  Box box{{2, 4}, {5, 8}};
  // Into a buffer of the box's rows and one padding row, which stays 0.
  Box buffer = box;
  buffer.hi[0] += 1;
  std::vector<float> part(4 * 4, -1.0f);
  std::fill(part.begin() + 12, part.end(), 0.0f);
  copyRegion(reinterpret_cast<const uint8_t *>(values.data()), Box::whole(whole),
             reinterpret_cast<uint8_t *>(part.data()), buffer, box, sizeof(float));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(part[r * 4 + c], float((2 + r) * 8 + 4 + c));
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(part[12 + c], 0.0f);
  // Back into a zeroed whole: the box's elements and nothing else.
  std::vector<float> back(48, 0.0f);
  copyRegion(reinterpret_cast<const uint8_t *>(part.data()), box,
             reinterpret_cast<uint8_t *>(back.data()), Box::whole(whole), box, sizeof(float));
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 8; ++c) {
      bool inside = r >= 2 && r < 5 && c >= 4;
      EXPECT_EQ(back[r * 8 + c], inside ? values[r * 8 + c] : 0.0f) << r << "," << c;
    }
}
