//===- PipelineRank.h - one rank of a pipeline executable -------*- C++ -*-===//
//
// The rank's state between the driver (PipelineMain.cpp: training steps,
// checkpoints, recovery) and the stage profiler (StageProfile.cpp: each
// stage's phases timed alone, for het-tune stages).
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_PIPELINERANK_H
#define HET_LIB_RUNTIME_PIPELINERANK_H

#include "SampleShards.h"
#include "TokenData.h"
#include "het/Support/ShareBlocks.h"
#include "Arguments.h"
#include "ModelInfo.h"
#include "Resharding.h"
#include "TensorBox.h"

#include "het-c/hetrt.h"
#include "het/Checkpoint/Store.h"
#include "het/Eval/Npy.h"

#include <cstdint>
#include <map>
#include <memory>
#include "LearningRate.h"

#include <string>
#include <vector>

namespace het::rt {

struct Options {
  long long steps = 100;
  LearningRateSchedule lr; // --lr and its schedule
  long long seed = 0;
  std::string data, save, checkpointDir, load, logSamples;
  std::string evalData;                   // --eval F.bin: validation tokens
  long long evalEvery = 0, evalWindows = 0;
  int threads = 1;
  long long printEvery = 1, checkpointEvery = 0, fullEvery = 4;
  bool syncCheckpoint = false;
  bool profileMemory = false; // --profile-memory: what the buffers' peak holds
  std::vector<int> killRanks;
  std::string killStep;
  std::string killAt = "step"; // step | transfer | all-reduce
  // --profile-stages: time each stage's phases alone (StageProfile.cpp).
  std::string profileOut;
  long long profileRepeats = 20;
};

using Env = std::map<std::string, Buffer>;

/// One rank's run of a pipeline.
class PipelineRank {
public:
  PipelineRank(const ModelInfo &info, const Options &o) : info_(info), o_(o) {}
  int run();
  /// Times the forward, backward and update of every stage variant in this
  /// process, without hetccl (receives get synthetic values, sends are
  /// dropped), and writes the means to o.profileOut (StageProfile.cpp).
  int profileStages();

private:
  const ModelInfo &info_;
  const Options &o_;
  const StageInfo *stage_ = nullptr;
  const StageVariant *variant_ = nullptr;
  std::map<std::string, hetrt_entry_fn> entries_;
  Env persistent_;                 // parameters and state
  std::map<std::string, TensorInfo> persistentInfo_; // their (local) shapes
  std::vector<Env> microBatch_;    // data and saved activations per micro-batch
  Env gradients_;                  // summed over the step's micro-batches
  std::map<std::string, unsigned> stepIndex_; // step argument -> its index
  std::vector<std::string> batchInputs_;      // data/label/index arguments read here
  std::map<std::string, het::eval::HostArray> loaded_; // --load's arrays by argument name
  std::unique_ptr<SampleSource> stream_;
  Dataset train_;
  // --data F.bin: a language model's windows of a token file.
  std::unique_ptr<TokenFile> tokenFile_;
  std::unique_ptr<TokenStream> tokens_;
  TokenArguments tokenArgs_;
  // --eval F.bin: validation windows, in order, whole global batches of them.
  std::unique_ptr<TokenFile> evalFile_;
  int64_t evalBatches_ = 0;
  bool evaluating_ = false; // the forward's outputs but the loss are dropped
  bool reports_ = false;    // prints the job's losses (last stage, replica 0, part 0)
  int dataInput_ = -1, labelInput_ = -1;
  double lossSum_ = 0;
  // Seconds inside the stage functions' compute (their time less the
  // messages and collectives they wait on), summed over the run: what is
  // not in it is the pipeline's time outside kernels.
  double kernelSeconds_ = 0;
  int64_t microBatchSamples_ = 0, firstSample_ = 0, share_ = 0;
  // What this job's checkpoints say of its layout (describeLayout).
  std::string layoutId_, writers_, stagesText_;

  void setUp();
  hetrt_entry_fn entry(const StageFunction &f);
  void call(const StageFunction &f, Env *batch, bool accumulate);
  /// This replica's share of micro-batch `micro` of step `step`; with
  /// `validation`, of batch `step` of that file's windows in order.
  void fillBatch(int64_t step, int micro, const TokenFile *validation = nullptr);
  /// The step's loss (this rank's sum over micro-batches / M) combined over
  /// the last stage's replicas.
  double combineLoss(double loss);
  /// Forward only over the --eval file's whole global batches: every
  /// working rank calls it at the same step; the reporting rank prints the
  /// mean loss and perplexity.
  void validate(int64_t afterSteps);
  // Where the training state lives (PipelineState.cpp).
  std::vector<NeededTensor> heldTensors() const;
  /// Of state held in blocks by batch share (het-shard-optimizer): the
  /// block of stage `stage`'s replica `replica` of a tensor of `rows` rows.
  het::ShareBlock shareBlock(int64_t rows, int stage, int replica) const;
  /// The part of step input `whole` that tensor-parallel part `tp` of
  /// replica `replica` of stage `stage` holds: its tensor-parallel slice
  /// and, with `blocks`, the replica's block of that slice's rows.
  Box heldBox(const TensorInfo &whole, int stage, int replica, int tp, bool blocks = true) const;
  /// The step input a persistent tensor is part of.
  const TensorInfo &wholeOf(const std::string &name) const;
  /// This rank's buffer of step input `whole` (initial `values`), laid out
  /// as its stage code `local` reads it.
  Buffer placeState(const TensorInfo &whole, const Buffer &values, const TensorInfo &local) const;
  void reportShardedState() const;
  void describeLayout();
  het::ckpt::Snapshot snapshot(int64_t step) const;
  void restore(const ReshardedState &state);
  int64_t resume(const std::string &root);
  int64_t agree(int64_t proposal);
  /// After step s: whether the job stops at the checkpoint it just wrote
  /// because het-run asked (StopRequest.h); every rank, idle ones too,
  /// calls it after every step and gets the same answer.
  bool stopsAfter(int64_t s);
  void saveAll(const std::string &path);
  int idle();
  /// Makes this rank the one at `place` (stage, replica, replica group):
  /// its variant, samples and freshly initialized state.
  void takePlace(const RankPlace &place);
  bool isLastStage() const { return stage_ == &info_.stages.back(); }
};

} // namespace het::rt

#endif
