//===- Resharding.h - resume from a checkpoint of any layout ----*- C++ -*-===//
//
// A pipeline's checkpoint is one directory per rank (D/rank<k>), each
// tensor stored by its model name, whole or as a shard with its index
// range, and every snapshot naming the job layout that wrote it. A rank of
// any later layout (other stages, replica counts, tensor-parallel degrees,
// device kinds, rank count) finds the newest step at which every rank of
// one writing layout left a checkpoint, reads the pieces of the tensors it
// needs from whichever ranks hold them, and cuts or joins them to its own
// shard. With the writer's own layout each rank reads its own directory
// only, as before.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_RESHARDING_H
#define HET_LIB_RUNTIME_RESHARDING_H

#include "het/Checkpoint/Store.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace het::rt {

/// One tensor a rank's state needs: its model name, dtype and the part of
/// the whole it holds (shard.axis < 0: all of it).
struct NeededTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  het::ckpt::Shard shard;
};

/// What a rank read for one step.
struct ReshardedState {
  bool found = false;
  int64_t step = -1;
  /// The bytes of each needed tensor, laid out as the rank holds it.
  std::map<std::string, std::vector<uint8_t>> tensors;
  /// The writing layout's meta (rank 0's snapshot): "layout", "world",
  /// "writers", "global_batch", "samples", "stages".
  std::map<std::string, std::string> meta;
  /// How it was read: "full", "incremental on full step 3", or
  /// "resharded from ...: ranks 0, 2 read".
  std::string how;
  std::vector<het::ckpt::Skipped> skipped; // newer steps rejected, newest first
};

/// The state `rank` needs, from the newest step <= maxStep (any if < 0) of
/// `root` at which every writer of one layout left a valid checkpoint.
/// Damaged or incomplete steps are skipped with their reason; a checkpoint
/// that cannot hold this state at all (a tensor no rank stored, another
/// dtype or whole shape) throws het::ckpt::CheckpointError naming it.
ReshardedState loadForLayout(const std::string &root, int rank, const std::string &layout,
                             const std::vector<NeededTensor> &needs, int64_t maxStep);

/// The snapshot directory of `rank` under `root`.
std::string rankDirectory(const std::string &root, int rank);

} // namespace het::rt

#endif
