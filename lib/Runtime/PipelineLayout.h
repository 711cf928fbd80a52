//===- PipelineLayout.h - which rank runs what, and which samples -*- C++ -*-===//
//
// A pipeline's ranks, from its description: stage j has replicas (listed by
// device group), each spanning tensor_parallel(j) ranks and taking a
// contiguous range of every micro-batch's samples (its share, in replica
// order). Ranks are numbered stage by stage (replica by replica, then
// tensor-parallel device), or, when het-run --cluster starts one rank per
// device group by group (HET_DEVICE_GROUP), each stage's replicas take the
// next ranks of their group's range; ranks of a group that no stage uses
// are idle (they only join the job's agreements).
//
// Routing of a channel between two stages follows from the same layout, so
// both ends compute the same messages: a tensor with rows per sample is
// re-sharded by sample range (each sender replica sends each receiver the
// samples both hold); one that is the same for every sample goes whole from
// one sender to each receiver (forward) or is a partial sum every sender
// adds to one receiver (backward).
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_PIPELINELAYOUT_H
#define HET_LIB_RUNTIME_PIPELINELAYOUT_H

#include "ModelInfo.h"

#include "het/Support/ShareBlocks.h"

#include <cstdint>
#include <string>
#include <vector>

namespace het::rt {

/// Where a rank sits; stage -1: idle.
struct RankPlace {
  int stage = -1, replica = -1, tp = 0, replicaGroup = -1;
  bool idle() const { return stage < 0; }
};

/// One message of a channel, seen from one end: the peer rank, and which
/// samples of this end's buffer it carries (count -1: the whole buffer).
struct Transfer {
  int peer = 0;
  int64_t firstSample = 0, samples = -1;
};

class PipelineLayout {
public:
  /// Lays the pipeline out over `worldSize` ranks (or as many as it needs,
  /// worldSize < 0); `byGroup`: het-run --cluster's numbering. Fails with a
  /// message naming the stage or group.
  static bool build(const ModelInfo &info, bool byGroup, PipelineLayout &layout,
                    std::string &error);

  int ranks() const { return static_cast<int>(places.size()); }
  int stages() const { return static_cast<int>(first.size()); }
  const RankPlace &place(int rank) const { return places[rank]; }
  int rankOf(int stage, int replica, int tp) const;
  int replicas(int stage) const { return static_cast<int>(first[stage].size()); }
  int tensorParallel(int stage) const { return tp[stage]; }
  int64_t firstSample(int stage, int replica) const { return offset[stage][replica]; }
  int64_t share(int stage, int replica) const { return shares[stage][replica]; }
  /// The blocks, replica by replica, of a tensor of `rows` rows whose
  /// stage holds it sharded by batch share (het-shard-optimizer).
  std::vector<het::ShareBlock> shareBlocks(int stage, int64_t rows) const {
    return het::shareBlocks(rows, shares[stage]);
  }

  /// The messages `me` sends to stage `to` / receives from stage `from` on
  /// `channel`; `accumulate` (receive, a partial sum): every message adds
  /// to the buffer, which starts at zero.
  std::vector<Transfer> sends(const ChannelInfo &channel, const RankPlace &me) const;
  std::vector<Transfer> receives(const ChannelInfo &channel, const RankPlace &me,
                                 bool &accumulate) const;

private:
  std::vector<RankPlace> places;
  std::vector<std::vector<int>> first; // [stage][replica]: rank of its device 0
  std::vector<std::vector<int64_t>> offset, shares;
  std::vector<int> tp;
};

} // namespace het::rt

#endif
