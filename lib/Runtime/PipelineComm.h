//===- PipelineComm.h - hetccl behind a pipeline's generated calls -*- C++ -*-===//
//
// Generated stage functions call hetrt_send / hetrt_recv / hetrt_all_reduce
// (convert-het-to-runtime) with stage numbers; this maps them to ranks and
// communicators. Ranks are numbered stage by stage: stage j's replica r is
// rank (replicas of stages before j) + r, and talks to replica r of the
// other stages (every stage has the same replica count).
//
// Sends are queued (copied). A phase's receives (the lowering puts them
// first in its function) are posted together, in one hetccl group with the
// queued sends, when the last of them is called; or the runtime flushes the
// sends at the end of a phase that no receive follows. Neighbours that both
// send before they receive (1F1B's steady state), several tensors per
// stage pair and skip connections then never wait on each other.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_PIPELINECOMM_H
#define HET_LIB_RUNTIME_PIPELINECOMM_H

#include "het-c/hetccl.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace het::rt {

struct PipelineComm {
  hetcclComm_t world = nullptr; // every rank (point-to-point, agreement)
  hetcclComm_t stage = nullptr; // this stage's replicas (gradient all-reduce)
  int rank = 0, worldSize = 1;
  int stageIndex = 0, replica = 0, replicas = 1;
  std::vector<int> firstRank; // per stage

  int rankOf(int stage, int replicaIndex) const { return firstRank[stage] + replicaIndex; }

  /// Sends waiting for the next receive or flush.
  struct PendingSend {
    int peer;
    std::vector<unsigned char> bytes;
  };
  std::vector<PendingSend> pending;
  /// Receives of the running phase, posted when all `expectedReceives` are.
  struct PendingReceive {
    int peer;
    void *buffer;
    size_t bytes;
  };
  std::vector<PendingReceive> receives;
  int expectedReceives = 0;
  /// Persistent all-reduce buffers per call site (the meta pointer): top-k
  /// keeps its error feedback per buffer address, and generated code hands
  /// over fresh buffers every step.
  std::map<const int64_t *, std::vector<unsigned char>> reduceInputs;

  /// Sends every queued message and posts every queued receive (one group).
  void flush();
};

/// The communicator state the generated calls use (one per process).
PipelineComm &pipelineComm();

/// Throws std::runtime_error naming `what` and hetccl's message on failure.
void checkCcl(hetcclResult_t result, const std::string &what, hetcclComm_t comm);

} // namespace het::rt

#endif
