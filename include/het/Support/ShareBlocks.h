//===- ShareBlocks.h - rows of a sharded tensor by batch share --*- C++ -*-===//
//
// Sharded data parallelism (het-shard-optimizer, ZeRO-1) gives each replica
// of a stage a block of rows of every parameter's optimizer state. The
// block follows the replica's share of each micro-batch: ceil(rows * share
// / micro-batch) rows, after the blocks of the replicas before it, cut at
// the end (the last blocks may be short or empty; the compiled block keeps
// its full length and its rows past the end stay zero). A block's length
// depends on the share alone, so the replicas of one share run one compiled
// variant; its offset depends on the shares before it, which the runtime
// knows. The compiler and the runtime both size blocks here.
//
//===----------------------------------------------------------------------===//

#ifndef HET_SUPPORT_SHAREBLOCKS_H
#define HET_SUPPORT_SHAREBLOCKS_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace het {

/// Rows of the block of a replica taking `share` of `microBatch` samples.
inline int64_t shareBlockRows(int64_t rows, int64_t share, int64_t microBatch) {
  return microBatch <= 0 ? rows : (rows * share + microBatch - 1) / microBatch;
}

/// One replica's block: `length` rows from `begin`, of which `held` (those
/// before the end of the whole) are real.
struct ShareBlock {
  int64_t begin = 0, length = 0, held = 0;
};

/// The blocks of every replica, in replica order, of `rows` rows.
inline std::vector<ShareBlock> shareBlocks(int64_t rows, const std::vector<int64_t> &shares) {
  int64_t microBatch = 0;
  for (int64_t s : shares)
    microBatch += s;
  std::vector<ShareBlock> blocks;
  int64_t next = 0;
  for (int64_t s : shares) {
    ShareBlock b;
    b.length = shareBlockRows(rows, s, microBatch);
    b.begin = std::min(next, rows);
    b.held = std::max<int64_t>(0, std::min(b.length, rows - b.begin));
    next += b.length;
    blocks.push_back(b);
  }
  return blocks;
}

} // namespace het

#endif
