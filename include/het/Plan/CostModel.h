//===- CostModel.h - predicted time and memory of a plan --------*- C++ -*-===//
#ifndef HET_PLAN_COSTMODEL_H
#define HET_PLAN_COSTMODEL_H

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/ModelDesc.h"
#include "het/Plan/NumberFormats.h"
#include "het/Plan/Plan.h"
#include "het/Plan/Profiles.h"
#include "het/Plan/RangeMax.h"
#include "het/Plan/SharedHostSchedule.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace het::plan {

struct TrainingSetup {
  /// Bytes of state per parameter on a device that trains in fp32: weights,
  /// gradients and Adam's two moments, 4 + 4 + 8. A kind training in a
  /// 16-bit format keeps the same fp32 master weights, gradients and
  /// moments plus the 16-bit copy of the weights its forward reads
  /// (stateBytes: 18, Megatron's figure for bf16 with fp32 gradients).
  double stateBytesPerParam = 16;
  /// Bytes of optimizer traffic per parameter (read + write of the state).
  double optimizerBytesPerParam = 28;
  /// Bytes per gradient element on the wire: het reduces gradients in
  /// fp32 whatever the format (docs/precision.md).
  double gradientBytesPerParam = 4;
  /// Fraction of device memory kept free (allocator, workspace, runtime).
  double memoryReserve = 0.1;
  Precision precision = Precision::Auto;
  /// The activation recomputation of the stages the planner builds (a
  /// plan's own stages say theirs).
  Recompute recompute = Recompute::None;
  /// The sharded data parallelism (ZeRO level 0-3) of the stages the
  /// planner builds (a plan's own stages say theirs).
  int zero = 0;

  /// The setup of Adam training `model` in `precision` (auto: fp32 for an
  /// fp32 model, else mixed; NumberFormats.h picks each kind's format).
  static TrainingSetup of(const ModelDesc &model, Precision precision = Precision::Auto);
  /// State bytes per parameter on a device training in `format`.
  double stateBytes(const std::string &format) const;
};

/// What one device of a stage holds at the peak of its buffers, by the
/// uses the runtime's --profile-memory measures (lib/Runtime/MemoryReport).
struct StageMemory {
  double parameters = 0, gradients = 0, optimizerState = 0; // held, sharded or not
  double activations = 0; // kept for the backward by the micro-batches in flight
  double batchData = 0;   // every micro-batch's samples of the step
  /// A backward writes its gradients beside the running sum of the step's
  /// micro-batches (with one micro-batch the sum is that result).
  double gradientResults = 0;
  /// Held only while one layer runs: its activation gradients, recomputed
  /// stash and attention scores, and under ZeRO a whole parameter or
  /// gradient tensor between its gather or reduce-scatter and its use.
  double workingSet = 0;
  /// Held only while the update runs: under ZeRO, a tensor's updated block
  /// before its all-gather.
  double updateWorkingSet = 0;
  /// The update writes new weights and optimizer state beside the current.
  double update() const {
    return 2 * (parameters + optimizerState) + gradients + updateWorkingSet;
  }
  double backward() const {
    return parameters + gradients + optimizerState + activations + batchData + gradientResults +
           workingSet;
  }
  double peak() const { return std::max(backward(), update()); }
};

/// The model's layer costs on one (device kind, tensor-parallel degree,
/// micro-batch size): the stage-independent part, as prefix sums so any
/// layer range costs O(1).
struct LayerTable {
  std::vector<double> compute; // prefix sums of fwd + bwd (+ TP all-reduces)
  std::vector<double> fwd;     // prefix sums of fwd alone
  std::vector<double> update;  // prefix sums of optimizer time
  std::vector<double> params;  // prefix sums of parameters
  /// Prefix sums of stashed bytes per sample that a layer's own backward
  /// reads, and of those only the next layer's backward reads; per layer,
  /// what a stage starting there keeps of earlier layers' results
  /// (LayerDesc::passedStashBytes, inputStashBytes).
  std::vector<double> stash, passedStash, inputStash;
  /// Per layer (not summed): the bytes per sample a layer holds only while
  /// it runs, one layer at a time. Under full recomputation, its whole stash
  /// while its backward recomputes it; on kinds whose kernels write
  /// het.attention as its three ops again and recompute the probabilities
  /// in the backward (generated CPU kernels), its f32 [.., Q, K] scores and
  /// probabilities.
  std::vector<double> workingSet;
  std::vector<double> data; // prefix sums of step inputs per sample (LayerDesc::dataBytes)
  /// Per layer: elements of its largest parameter tensor (split over TP).
  std::vector<double> largestTensor;
  bool profiled = false;
  /// Optimizer state and weight copies per parameter in the group's format
  /// (TrainingSetup::stateBytes), of which the 16-bit copy of the weights a
  /// 16-bit kind's forward reads.
  double stateBytesPerParam = 16, copyBytesPerParam = 0;
  double range(const std::vector<double> &p, int b, int e) const {
    return p[e] - p[b];
  }
  /// One stage call's cost besides its layers' (measured profiles only:
  /// ProfileTable::call), paid once per stage and micro-batch.
  LayerTime call;
  /// A stage of layers [b, e) per micro-batch: its forward, its forward
  /// and backward, and its optimizer step per iteration, each with the
  /// stage call's cost once.
  double stageFwd(int b, int e) const { return range(fwd, b, e) + call.fwd; }
  double stageCompute(int b, int e) const { return range(compute, b, e) + call.fwd + call.bwd; }
  double stageUpdate(int b, int e) const { return range(update, b, e) + call.update; }
  /// The most any layer of [b, e) holds only while it runs (workingSet).
  double workingSetPeak(int b, int e) const { return workingSetMax.of(b, e); }
  /// Stashed bytes per sample of a stage over layers [b, e).
  double stashOf(int b, int e) const {
    double kept = range(stash, b, e) + (e - 1 > b ? range(passedStash, b, e - 1) : 0);
    return kept + (b > 0 && size_t(b) < inputStash.size() ? inputStash[b] : 0);
  }
  double largestTensorOf(int b, int e) const { return largestTensorMax.of(b, e); }
  /// Parameters of the largest layer of [b, e).
  double largestLayerOf(int b, int e) const { return largestLayerMax.of(b, e); }
  /// Range maxima of workingSet, largestTensor and each layer's parameters
  /// (CostModel::table builds them once the per-layer figures are in).
  RangeMax workingSetMax, largestTensorMax, largestLayerMax;
  /// Built for full recomputation: under ZeRO-3 a layer's recomputed
  /// forward gathers its weights, which stay whole until its backward ends.
  bool recomputesLayers = false;
  /// Where a stage's device sits, for its memory: its share of each
  /// micro-batch (mbs samples, `fraction` of the stage's), the micro-batches
  /// in flight and in the step, and the stage's ZeRO level.
  struct MemoryPlace {
    int mbs = 1, inFlight = 1, microBatches = 1, zero = 0;
    double fraction = 1;
  };
  /// One device's memory for a stage of `params` parameters, `stash` and
  /// `data` bytes per sample (range sums), `working` the largest working
  /// set per sample, `largest` the largest parameter tensor of a layer and
  /// `largestLayer` the parameters of the largest layer.
  StageMemory memory(double params, double stash, double data, double working,
                     double largest, double largestLayer, const MemoryPlace &at) const;
};

/// Collective and message times measured on this host (het-tune stages'
/// message records, else het-tune collectives' all-reduces), which replace
/// the alpha-beta link formulas for stages whose devices share one node.
/// Each returns seconds, or a negative number where nothing was measured.
struct MeasuredCommunication {
  /// One all-reduce of `bytes` over `ranks` ranks right after another (the
  /// runtime all-reduces gradients tensor by tensor, as a ring).
  std::function<double(double bytes, int ranks)> allReduce;
  /// One message of `bytes` to a rank that waits for it (between stages;
  /// the first step of a stage's gradient sync).
  std::function<double(double bytes)> message;
  /// The cores of the host the stages' ranks share (0: unknown). Stage
  /// profiles time a layer on a core of its own; when the ranks outnumber
  /// the cores, the pipeline is simulated on the shared cores
  /// (SharedHostSchedule.h) instead of the closed form.
  int cores = 0;
  std::string source; // where they were measured, for reports
};

struct StageCost {
  double fwd = 0, bwd = 0;     // per micro-batch (bwd includes TP comm)
  double p2p = 0;              // sends charged to this stage per micro-batch
  double sync = 0, update = 0; // once per iteration
  double tiedSync = 0;         // of sync: tied parameters' gradients with the other holders
  StageMemory memory;        // of the member that fits worst, by use
  double capacityBytes = 0;  // that member's
  double memoryBytes() const { return memory.peak(); }
  double time() const { return fwd + bwd + p2p; }
};

struct Evaluation {
  double iterationTime = 0;
  double pipelineTime = 0, syncTime = 0;
  /// When more ranks share one host than it has cores
  /// (MeasuredCommunication::cores): the iteration simulated on them (each
  /// stage's sync and update after its own last backward); pipelineTime is
  /// then the same schedule without them, and syncTime what they add.
  double sharedCoresTime = 0;
  std::vector<StageCost> stages;
  int bottleneck = -1; // the slowest stage
  bool fits = true;
  double worstShortfallBytes = 0; // largest excess over capacity
  std::string problem;            // why the plan is invalid, if it is
};

class CostModel {
public:
  CostModel(const ModelDesc &model, const Cluster &cluster,
            const ProfileSet *profiles,
            std::optional<TrainingSetup> setup = std::nullopt);
  /// Prices communication inside one node by measurements (null: the
  /// cluster's link figures). Must outlive the model.
  void setMeasuredCommunication(const MeasuredCommunication *measured) {
    communication = measured;
  }

  const ModelDesc &model() const { return modelDesc; }
  const Cluster &cluster() const { return clusterDesc; }
  const TrainingSetup &setup() const { return training; }
  /// Plans the planner builds from now on recompute activations so (the
  /// layer tables of each mode are cached apart).
  void setRecompute(Recompute recompute) { training.recompute = recompute; }
  void setZero(int zero) { training.zero = zero; }
  /// The number format each cluster group trains in (NumberFormats.h),
  /// chosen from the setup's precision and each kind's formats.
  const std::vector<std::string> &formats() const { return groupFormats; }
  const std::string &format(int g) const { return groupFormats[g]; }
  /// Prices the groups in `formats` instead (a plan file's; empty entries
  /// keep the chosen one). Fails, naming `file`'s stage field, where a kind
  /// lacks the format it is given.
  void trainIn(const std::vector<std::string> &formats, const std::string &file);

  /// Layer costs for group `g` at tensor-parallel `tp` and micro-batch `mbs`
  /// per replica (cached), with `recompute` (default: the setup's). Full
  /// recomputation keeps each layer's input instead of its stash (the
  /// previous layer's output bytes) and runs its forward again before its
  /// backward; selective is priced as none for now (conservative: it keeps
  /// less and adds little).
  const LayerTable &table(int g, int tp, int mbs) const {
    return table(g, tp, mbs, training.recompute);
  }
  const LayerTable &table(int g, int tp, int mbs, Recompute recompute) const;

  /// Micro-batch per replica: the global batch split over micro-batches,
  /// then over replicas (rounded up: the slowest replica sets the pace).
  static int microBatchPerReplica(long globalBatch, int microBatches,
                                  int replicas);

  /// The replicas of a stage on one device group, and each one's share of
  /// a micro-batch.
  struct Member {
    int group = 0, replicas = 1, mbs = 1;
    int experts = 0; // expert parallelism: experts each replica holds (0: all)
  };

  /// Time to send one micro-batch's activations across boundary `layer`
  /// (output of layer-1) from a stage whose `ra` replicas run on the groups
  /// `a` to one whose `rb` replicas run on `b`: min(ra, rb) parallel
  /// streams over the slowest of the links between them. Streams leaving a
  /// node share its network card: as many as the replicas of that group on
  /// that node, from `aReplicas`/`bReplicas` (each group's replicas, in the
  /// order of `a`/`b`; empty: the stage's total on each group).
  double boundaryTime(int layer, long microBatchSamples, const std::vector<int> &a, int ra,
                      const std::vector<int> &b, int rb,
                      const std::vector<int> &aReplicas = {},
                      const std::vector<int> &bReplicas = {}) const;
  double boundaryTime(int layer, long microBatchSamples, int a, int ra, int b, int rb) const {
    return boundaryTime(layer, microBatchSamples, std::vector<int>{a}, ra, std::vector<int>{b},
                        rb);
  }
  /// Gradient all-reduce of `params` elements over a stage's replicas
  /// (of one group: hierarchical where the algorithm is; of several: a
  /// flat ring or tree over the slowest link between them).
  double syncTime(const std::vector<Member> &members, int tp, double params,
                  AllReduceAlgorithm algorithm) const;
  double syncTime(int g, int tp, int replicas, double params,
                  AllReduceAlgorithm algorithm) const {
    return syncTime({{g, replicas, 1}}, tp, params, algorithm);
  }
  /// The cheapest algorithm for that all-reduce.
  AllReduceAlgorithm bestAlgorithm(const std::vector<Member> &members, int tp,
                                   double params) const;
  double capacityBytes(int g) const;
  /// The stage's gradient traffic under ZeRO level `zero` with
  /// `microBatches` micro-batches, in units of one all-reduce of its
  /// gradients: 1 for 0 and 1 (a reduce-scatter and an all-gather are
  /// the ring all-reduce's halves); 2 reduce-scatters every micro-batch;
  /// 3 also all-gathers the parameters in each micro-batch's forward and
  /// backward.
  static double zeroTraffic(int zero, int microBatches);
  /// Of a per-rank figure `whole` without tensor parallelism (bytes a
  /// layer stashes, say), the fraction each of `degree` ranks holds, from
  /// the figure at degree 2 (`atTwo`): the part that does not split
  /// (2 atTwo - whole) stays whole on every rank, the rest splits.
  static double tensorParallelShare(double whole, double atTwo, int degree);

  /// Where a stage sits in its pipeline: what the cost of its layer range
  /// depends on besides the range itself.
  struct StageContext {
    std::vector<Member> members;
    int tp = 1;
    std::vector<int> prevGroups, nextGroups; // empty: first / last stage
    int prevReplicas = 0, nextReplicas = 0;
    /// The neighbours' replicas on each of their groups (prevGroups order).
    std::vector<int> prevGroupReplicas, nextGroupReplicas;
    long samples = 1; // per micro-batch, all replicas together
    int inFlight = 1; // micro-batches whose activations it holds (1F1B)
    Recompute recompute = Recompute::None;
    int zero = 0;         // ZeRO level (StagePlan::zero)
    int microBatches = 1; // of the step
    bool bestAlgorithm = true; // pick the all-reduce; else use `algorithm`
    AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
    int replicas() const;
    std::vector<int> groups() const;
    /// Expert parallelism: the experts all replicas hold (0: none).
    int expertsHeld() const;
    /// Member k's part of the experts' state and work (1 without expert
    /// parallelism).
    double expertFraction(size_t k) const;
    /// Member k's share of the micro-batch (1 for one replica).
    double fraction(size_t k) const;
  };
  /// Memory per device of member `k` of a stage over layers [b, e): its
  /// state (split over TP, its blocks of sharded state sized by its share
  /// of the micro-batch), the activations of the micro-batches in flight
  /// under 1F1B, the largest working set of one layer for a micro-batch
  /// (LayerTable::workingSet), and the rest of StageMemory.
  StageMemory memory(const LayerTable &t, int b, int e, const StageContext &ctx, size_t k) const;
  /// Expert parallelism: one exchange of member k's rows (het.moe_to_experts
  /// or moe_from_experts, every mixture-of-experts layer of [b, e)) per
  /// micro-batch; 0 without it.
  double expertExchangeTime(const StageContext &ctx, int b, int e, size_t k) const;
  double memoryBytes(const LayerTable &t, int b, int e, const StageContext &ctx, size_t k) const {
    return memory(t, b, e, ctx, k).peak();
  }
  /// The stage's boundary with its next (`next`) or previous stage at
  /// `layer`, for a micro-batch: boundaryTime with every group's replicas.
  double boundaryTime(int layer, const StageContext &ctx, bool next) const;
  /// The tables of a stage's members: table(group, tp, mbs) of each.
  std::vector<const LayerTable *> tables(const StageContext &ctx) const;
  /// The cost of layers [b, e) as that stage; `tables` are tables(ctx).
  /// Replicas of several kinds run in parallel: the stage takes as long as
  /// its slowest member and must fit on each. Sets `chosen` to the
  /// all-reduce algorithm used.
  StageCost stageCost(const std::vector<const LayerTable *> &tables, const StageContext &ctx,
                      int b, int e, AllReduceAlgorithm *chosen = nullptr) const;
  /// One tensor-parallel all-reduce of `bytes` over `tp` ranks of a node:
  /// measured (setMeasuredCommunication) where the host was measured, else
  /// the ring over the node's link.
  double tensorParallelAllReduce(double bytes, int tp, const Link &intra) const;
  /// A stage's update of the copies of tied parameters whose first layer
  /// lies in an earlier stage (TiedParameters.h in lib/Partition).
  double tiedCopyUpdate(const LayerTable &t, int b, int e) const;
  /// The once-per-step all-reduce of the gradients of tied parameters that
  /// a stage over [b, e) shares with other stages.
  double tiedSync(const StageContext &ctx, int b, int e) const;
  /// StageCost::sync of layers [b, e) as that stage: the link formulas'
  /// all-reduce, or, where measured communication prices the node (tp 1,
  /// several replicas, one node), the measured all-reduces plus the last
  /// stage's loss all-reduce. The split solver prices its ranges by it.
  double stageSync(const std::vector<const LayerTable *> &tables, const StageContext &ctx,
                   int b, int e, AllReduceAlgorithm *chosen = nullptr) const;

  /// The context of stage `j` of `plan` (shares from the plan, or even).
  StageContext contextOf(const Plan &plan, int j) const;

  /// Predicts a whole plan: 1F1B pipeline time sum(t_i) + (m-1) max(t_i),
  /// plus the slowest stage's gradient sync and optimizer step.
  Evaluation evaluate(const Plan &plan) const;

  /// Whether the ranks of `plan` share one host's cores, more ranks than
  /// the measured communication's `cores`; if so, fills `stages` (each
  /// rank's pass times, boundary messages, and the sync and update of
  /// `costs`, the plan's stage costs) and `cores` for simulateSharedHost,
  /// which then replaces the closed form.
  bool sharedHostStages(const Plan &plan, const std::vector<StageCost> &costs,
                        std::vector<SharedHostStage> &stages, int &cores) const;

private:
  const ModelDesc &modelDesc;
  const Cluster &clusterDesc;
  const ProfileSet *profiles;
  const MeasuredCommunication *communication = nullptr;
  TrainingSetup training;
  std::vector<std::string> groupFormats;
  /// Whether every one of `groups` lies within one node (measured
  /// communication applies).
  bool oneNode(const std::vector<int> &groups) const;
  /// How many of a stage's `replicas` on group `g` share one node (spread
  /// evenly over the group's nodes).
  int replicasPerNode(int g, int replicas) const;
  /// Measured gradient sync of layers [b, e) over `replicas` ranks: one
  /// all-reduce per parameter tensor; negative when not measured.
  double measuredSync(int b, int e, int replicas) const;
  mutable std::map<std::tuple<int, int, int, Recompute>, LayerTable> cache;
};

} // namespace het::plan

#endif
