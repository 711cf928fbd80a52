//===- Store.h - the on-disk checkpoint format, write and resume -*- C++ -*-===//
//
// A checkpoint of step N in directory D is two files (docs/checkpoints.md):
//   D/step-<N>.bin   the bytes of the tensors stored at this step
//   D/step-<N>.json  the manifest: kind (full | incremental), base step,
//                    every tensor (dtype, shape, sha256, offset or the step
//                    that holds it), the data file's size and sha256, and
//                    the manifest's own sha256.
// The data file is renamed into place first and the manifest last, so a
// visible manifest is the commit point of the checkpoint.
//
#ifndef HET_CHECKPOINT_STORE_H
#define HET_CHECKPOINT_STORE_H

#include "het/Checkpoint/Snapshot.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace het::ckpt {

/// What one save wrote (for logs, tests and the benchmark).
struct SaveInfo {
  int64_t step = -1;
  bool full = true;
  int64_t base = -1;              // the full checkpoint an increment refers to
  size_t tensorsStored = 0, tensorsReused = 0;
  uint64_t bytesWritten = 0;
  double seconds = 0;             // hashing + writing + fsync
};

/// Hashes of each tensor of a full checkpoint: what an increment compares to.
using HashMap = std::map<std::string, std::string>;

/// Writes `snap` as checkpoint `step` in `dir`. With `base` >= 0 and
/// `baseHashes` given, tensors whose hash equals the base's are not stored
/// (an incremental checkpoint); otherwise everything is stored (full).
/// `hashesOut` receives the hash of every tensor.
SaveInfo writeCheckpoint(const std::string &dir, int64_t step, const Snapshot &snap,
                         int64_t base = -1, const HashMap *baseHashes = nullptr,
                         HashMap *hashesOut = nullptr);

/// A checkpoint resume did not take, and why.
struct Skipped {
  int64_t step;
  std::string reason;
};

struct ResumeResult {
  bool found = false;
  int64_t step = -1;
  bool full = true;
  int64_t base = -1;
  Snapshot snapshot;
  std::vector<Skipped> skipped;   // newer checkpoints rejected, newest first
  /// One line per skipped checkpoint, "step 12: <reason>".
  std::string report() const;
};

/// Steps that have a manifest in `dir`, ascending (not validated).
std::vector<int64_t> listSteps(const std::string &dir);

/// Loads and fully verifies checkpoint `step` (manifest checksum, data file
/// size and checksum, every tensor's checksum, the base of an increment).
/// Throws CheckpointError with the reason on any problem.
Snapshot loadCheckpoint(const std::string &dir, int64_t step, bool *full = nullptr,
                        int64_t *base = nullptr);

/// Checkpoint `step`'s tensors (dtype, shape, shard; no bytes) and meta,
/// from its manifest alone (its checksum verified, not the data): what a
/// rank of another layout reads to find which files hold what it needs.
Snapshot describeCheckpoint(const std::string &dir, int64_t step);

/// The newest checkpoint with step <= maxStep (any if maxStep < 0) that
/// loads and verifies; the newer ones that failed are in `skipped`.
ResumeResult resumeLatest(const std::string &dir, int64_t maxStep = -1);

} // namespace het::ckpt

#endif
