//===- PipelineComm.h - hetccl behind a pipeline's generated calls -*- C++ -*-===//
//
// Generated stage functions call hetrt_send / hetrt_recv (stage numbers and
// channels) and hetrt_all_reduce / hetrt_all_gather / hetrt_reduce_scatter
// (a communicator word: the stage's data-parallel replicas, or the
// tensor-parallel devices of this replica); this maps them to ranks
// (PipelineLayout) and communicators.
//
// Sends are queued (copied). A phase's receives (the lowering puts them
// first in its function) are posted together, in one hetccl group with the
// queued sends, when the last of them is called; or the runtime flushes the
// sends at the end of a phase that no receive follows. Neighbours that both
// send before they receive (1F1B's steady state), several tensors per
// stage pair, skip connections and stages of different splits (one call,
// several messages) then never wait on each other: test/pipeline/
// deadlock.test replays traced runs (CommTrace.h) with unbuffered sends.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_PIPELINECOMM_H
#define HET_LIB_RUNTIME_PIPELINECOMM_H

#include "PipelineLayout.h"

#include "het-c/hetccl.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace het::rt {

struct PipelineComm {
  hetcclComm_t world = nullptr;  // every rank (point-to-point, agreement)
  hetcclComm_t data = nullptr;   // this stage's replicas at this device (gradients,
                                 // batch statistics); null with one replica
  hetcclComm_t tensor = nullptr; // this replica's devices; null without tensor parallelism
  hetcclComm_t job = nullptr;    // every working (not idle) rank: job-wide decisions
                                 // (loss scaling's found-inf); null with one
  /// Per tied group (ModelInfo::tiedGroups): every rank of its stages, a
  /// tied parameter's gradient; null where this rank is not one of them.
  std::vector<hetcclComm_t> tied;
  int rank = 0, worldSize = 1;
  RankPlace place;
  /// --profile-stages: no hetccl; a receive fills its buffer with synthetic
  /// values at once and a send is dropped.
  bool profiling = false;
  const ModelInfo *info = nullptr;
  PipelineLayout layout;

  /// Sends waiting for the next receive or flush.
  struct PendingSend {
    int peer;
    std::vector<unsigned char> bytes;
  };
  std::vector<PendingSend> pending;
  /// A partial sum from several senders (a backward message of a value
  /// that is not split by sample): each part is added, widened to f32, into
  /// `total` in the order of the receives; after the group the total goes
  /// to `destination` in its format (bf16 or f16 rounded once, to nearest
  /// even), as the receiver's cast of an f32 sum would round it.
  struct PartialSum {
    std::vector<float> total;
    void *destination = nullptr;
    int format = 0; // KernelCall.h's ElementFormat: 0 f32, 1 bf16, 2 f16
  };
  /// Receives of the running phase, posted when all `expectedReceives`
  /// calls have been made. A part of a partial sum lands in `scratch`.
  struct PendingReceive {
    int peer;
    void *buffer;
    size_t bytes;
    std::shared_ptr<PartialSum> sum;
    std::vector<unsigned char> scratch;
  };
  std::vector<PendingReceive> receives;
  int expectedReceives = 0, receiveCalls = 0;
  /// Persistent all-reduce buffers per call site (the meta pointer): top-k
  /// keeps its error feedback per buffer address, and generated code hands
  /// over fresh buffers every step.
  std::map<const int64_t *, std::vector<unsigned char>> reduceInputs;

  const ChannelInfo &channel(int from, int to, int number) const;
  /// World ranks of a collective's communicator (word: 0 this stage's
  /// replicas at this device, 1 this replica's tensor-parallel devices).
  std::vector<int> members(int64_t word) const;
  /// The communicator of a collective's word (0 the stage's replicas, 1
  /// this replica's tensor-parallel devices, 2 every working rank, 3 + k
  /// tied group k); null for a group of one.
  hetcclComm_t communicator(int64_t word) const;
  /// Sends every queued message and posts every queued receive (one group).
  void flush();
};

/// The communicator state the generated calls use (one per process).
PipelineComm &pipelineComm();

/// Throws std::runtime_error naming `what` and hetccl's message on failure.
void checkCcl(hetcclResult_t result, const std::string &what, hetcclComm_t comm);

} // namespace het::rt

#endif
