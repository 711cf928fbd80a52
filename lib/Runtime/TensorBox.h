//===- TensorBox.h - a tensor's place in a larger one -----------*- C++ -*-===//
//
// A rank holds a part of some tensors: a tensor-parallel slice along one
// axis, a block of rows by batch share (ZeRO), or a block of rows of such
// a slice (ZeRO under tensor parallelism). A Box is that part as index
// ranges [lo, hi) per dimension of the whole; checkpoints record it as a
// het::ckpt::Shard, and copies between a whole and its parts, or between
// the parts of two layouts (resharding a checkpoint), are copies of the
// boxes' intersection.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_TENSORBOX_H
#define HET_LIB_RUNTIME_TENSORBOX_H

#include "het/Checkpoint/Snapshot.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace het::rt {

struct Box {
  std::vector<int64_t> lo, hi;

  /// All of a tensor of `shape`.
  static Box whole(const std::vector<int64_t> &shape);
  int64_t volume() const;
  std::vector<int64_t> shape() const;
  bool operator==(const Box &o) const { return lo == o.lo && hi == o.hi; }
};

/// The whole tensor a stored tensor of `shape` is `shard` of.
std::vector<int64_t> wholeShape(const std::vector<int64_t> &shape, const het::ckpt::Shard &shard);
/// Where a stored tensor of `shape` lies in its whole.
Box boxOf(const std::vector<int64_t> &shape, const het::ckpt::Shard &shard);
/// How a checkpoint records `box` of a tensor of shape `whole`: none when
/// it is all of it, one axis's range, or an axis's range and a range of
/// rows. Throws std::logic_error for boxes partial along more axes.
het::ckpt::Shard shardOf(const Box &box, const std::vector<int64_t> &whole);
Box intersect(const Box &a, const Box &b);

/// Copies the elements of `region` from `src` (holding box `from`) to `dst`
/// (holding box `to`), both row-major.
void copyRegion(const uint8_t *src, const Box &from, uint8_t *dst, const Box &to,
                const Box &region, size_t elementBytes);

} // namespace het::rt

#endif
