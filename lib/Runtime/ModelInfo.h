//===- ModelInfo.h - the calling convention of a compiled model ----*- C++ -*-===//
//
// het-compile embeds `het_model_info`, a text the runtime reads back:
//   het-model 1
//   step <function> <inputs> <outputs>
//   in <name> <f32|i64> <rank> <sizes...> <role> <init...>   (per input)
//   out <name> <f32|i64> <rank> <sizes...>                    (per output)
//   predict <function> <inputs> 1                             (optional)
//   in <name>                                                 (per input)
//   out logits f32 <rank> <sizes...>
// Roles: data, label, index, param, state. Inits: `zeros`, `randint B`,
// `uniform LO HI`, `normal` (as het-eval --random-inputs draws them).
//
// A pipeline (het-compile --cluster; version 3) has the step lines of the
// unpartitioned step at the model's batch (so every rank initializes
// arguments exactly as a single-rank run would), then
// (lib/Conversion/Distributed writes it):
//   pipeline <stages> <micro-batches> <global-batch> <sum|avg>
//   batched <name>               (per step input with one row per sample)
//   group <name> <count>         (per device group, in the cluster's order)
//   predicted <seconds>          (optional: the plan's iteration time)
//   plan_key <key>               (optional: het-run --tuning-db records the time under it)
//   stage <j> <name> <begin> <end> <tensor-parallel> <replica-groups>
//   replicas <j> <group> <vendor> <arch> <library> <count> <samples> <variant>
//   order <j> F0 F1 B0 ...
//   function <j> <variant> <forward|backward|update> <symbol> <inputs> <outputs> <receives>
//   in <name> <f32|i64> <rank> <sizes...>                     (per input)
//   out <name> <f32|i64> <rank> <sizes...>                    (per output)
//   channel <from> <to> <channel> <forward|backward> <rows-per-sample>
//   shard <name> <axis> <parts>
//   share_shard <name>           (state held in blocks of rows by batch share)
//   expert_shard <name>          (experts held in blocks by expert-parallel replicas)
// `sum`: each replica's loss is weighted by its share of the micro-batch,
// so replicas' losses and gradients add up; `avg`: they are averaged.
// Rows per sample of a channel: > 0 re-sharded by sample range, 0 the same
// for every sample (replicated forward, a partial sum backward), -1 only
// between stages with the same replicas and shares.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_MODELINFO_H
#define HET_LIB_RUNTIME_MODELINFO_H

#include <cstdint>
#include <string>
#include <vector>

namespace het::rt {

struct TensorInfo {
  std::string name;
  /// f32, i64, bf16 or f16 (bf16/f16: activations a mixed-precision stage
  /// keeps between its forward and backward; steps' arguments are f32 or
  /// i64, Arguments.cpp checks). The one record of the element type: the
  /// predicates below derive from it, so they cannot disagree.
  std::string format = "f32";
  bool isInteger() const { return format == "i64"; }
  int elementBytes() const { return isInteger() ? 8 : format == "f32" ? 4 : 2; }
  std::vector<int64_t> shape;
  std::string role, init; // inputs of the step only
  double a = 0, b = 0;    // randint bound / uniform range
  int64_t count() const;
};

/// One of a stage's three functions (convert-het-to-runtime).
struct StageFunction {
  std::string symbol;
  std::vector<TensorInfo> inputs, outputs;
  int receives = 0; // hetrt_recv calls per run
};

/// The replicas of a stage on one device group.
struct ReplicaGroupInfo {
  std::string group, vendor, arch, library, variant;
  int count = 1;
  int64_t samples = 0; // of every micro-batch, per replica
  int64_t experts = 0; // expert parallelism: experts each replica holds (0: all)
};

/// The functions of a stage for one share of the micro-batch and kernel
/// library.
struct StageVariant {
  std::string key;
  StageFunction forward, backward, update;
  /// What the stage keeps from step to step and --save writes: the
  /// update's outputs (parameters, optimizer state) and the state the
  /// forward pass updates (BatchNorm's running statistics).
  std::vector<const TensorInfo *> keptOutputs() const;
};

struct StageInfo {
  std::string name;
  long layerBegin = 0, layerEnd = 0;
  int tensorParallel = 1;
  std::vector<ReplicaGroupInfo> replicaGroups;
  std::vector<std::string> order; // "F<i>" / "B<i>"
  std::vector<StageVariant> variants;
  int replicas() const;
  const StageVariant *variant(const std::string &key) const;
};

struct ChannelInfo {
  int from = 0, to = 0, channel = 0;
  bool backward = false;
  int64_t rowsPerSample = -1;
};

struct ShardInfo {
  std::string name;
  int axis = 0, parts = 1;
};

struct ModelInfo {
  int version = 1;
  int microBatches = 1;
  int64_t globalBatch = 0;
  bool lossSum = false;            // replicas' losses add up (weighted)
  double predictedSeconds = 0;     // the planner's iteration time, 0: unknown
  std::string planKey;             // het/Plan/MeasuredPlans.h; empty: none
  std::vector<std::pair<std::string, int>> groups; // device groups, cluster order
  std::vector<StageInfo> stages;   // a pipeline (version 3) only
  std::vector<std::string> batched;
  std::vector<ChannelInfo> channels;
  std::vector<ShardInfo> shards;
  /// Optimizer state each replica of its stage holds a block of rows of
  /// (het-shard-optimizer; het/Support/ShareBlocks.h sizes the blocks).
  std::vector<std::string> shareSharded;
  /// Per het.tied_group (communicator word 3 + its index): the stages whose
  /// ranks sum a tied parameter's gradient.
  std::vector<std::vector<int>> tiedGroups;
  std::string stepName;
  std::vector<TensorInfo> inputs, outputs;
  std::string predictName;
  std::vector<std::string> predictInputs; // names of step inputs
  TensorInfo logits;
  bool hasPredict() const { return !predictName.empty(); }
  bool isBatched(const std::string &name) const;
  const ChannelInfo *channel(int from, int to, int channel) const;
  const ShardInfo *shard(const std::string &name) const;
  bool isShareSharded(const std::string &name) const;
  /// Parameters (and optimizer state) whose experts (axis 0) an
  /// expert-parallel stage's replicas hold in blocks (`expert_shard`).
  std::vector<std::string> expertSharded;
  bool isExpertSharded(const std::string &name) const;
  /// The first expert and the count replica `replica` of stage `stage`
  /// holds of an expert-sharded tensor.
  std::pair<int64_t, int64_t> expertBlock(int stage, int replica) const;
};

/// Parses the embedded text; on failure returns false and sets `error`.
bool parseModelInfo(const char *text, ModelInfo &info, std::string &error);

} // namespace het::rt

#endif
