//===- PipelineState.cpp - where a pipeline rank's training state lives ---===//
//
// A rank holds the persistent tensors its stage reads (parameters,
// optimizer state, running statistics): whole, as its tensor-parallel
// part, as its replica's block of rows by batch share (ZeRO), or as its
// replica's block of its part (ZeRO under tensor parallelism). Each is a
// Box of the whole tensor (TensorBox.h); here the rank places its boxes
// at the start, names them in its checkpoints, resumes them from a
// checkpoint of any layout, reports the bytes it holds and joins them for
// --save.
//
//===----------------------------------------------------------------------===//

#include "het-c/hetccl.h"

#include "Arguments.h"
#include "ModelInfo.h"
#include "PipelineComm.h"
#include "PipelineRank.h"
#include "Resharding.h"
#include "StopRequest.h"
#include "TensorBox.h"

#include "het/Checkpoint/Store.h"
#include "het/Eval/Npy.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace eval = het::eval;
namespace ckpt = het::ckpt;

namespace het::rt {

/// With sharded state (het-shard-optimizer): the bytes of parameters,
/// accumulated gradients and optimizer state this rank holds against the
/// whole stage's, beside the replica's share of the batch that sized its
/// blocks.
void PipelineRank::reportShardedState() const {
  const PipelineComm &comm = pipelineComm();
  struct Held {
    size_t held = 0, whole = 0;
  } params, gradients, state;
  bool sharded = false;
  for (const auto &[name, buffer] : persistent_) {
    const TensorInfo &t = info_.inputs.at(stepIndex_.at(name));
    // Against what the rank would hold unsharded: its tensor-parallel part.
    size_t element = t.elementBytes();
    size_t part = element * heldBox(t, comm.place.stage, comm.place.replica, comm.place.tp,
                                     /*blocks=*/false).volume();
    Held &kind = t.role == "param" ? params : state;
    kind.whole += part;
    if (t.role == "param")
      gradients.whole += part; // one gradient per parameter
    if (!info_.isShareSharded(name)) {
      kind.held += buffer.bytes;
      continue;
    }
    sharded = true;
    kind.held += element * heldBox(t, comm.place.stage, comm.place.replica, comm.place.tp).volume();
  }
  if (!sharded)
    return;
  // The gradients the update reads: accumulated over the micro-batches
  // whole (ZeRO-1) or as blocks (ZeRO-2/3, padding included).
  for (const TensorInfo &t : variant_->update.inputs)
    if (t.name.rfind("grad.", 0) == 0)
      gradients.held += bytesOf(t);
  int64_t share = comm.layout.share(comm.place.stage, comm.place.replica), batch = 0;
  for (int r = 0; r < comm.layout.replicas(comm.place.stage); ++r)
    batch += comm.layout.share(comm.place.stage, r);
  auto part = [](const Held &h) {
    char text[96];
    std::snprintf(text, sizeof text, "%zu of %zu bytes (%.1f%%)", h.held, h.whole,
                  h.whole ? 100.0 * h.held / h.whole : 0.0);
    return std::string(text);
  };
  std::printf("rank %d: sharded training state held (its share of the batch %lld/%lld = "
              "%.1f%%): parameters %s, gradients %s, optimizer state %s\n",
              comm.rank, static_cast<long long>(share), static_cast<long long>(batch),
              100.0 * share / batch, part(params).c_str(), part(gradients).c_str(),
              part(state).c_str());
}

het::ShareBlock PipelineRank::shareBlock(int64_t rows, int stage, int replica) const {
  return pipelineComm().layout.shareBlocks(stage, rows).at(replica);
}

Box PipelineRank::heldBox(const TensorInfo &whole, int stage, int replica, int tp,
                         bool blocks) const {
  Box box = Box::whole(whole.shape);
  if (const ShardInfo *shard = info_.shard(whole.name); shard && shard->parts > 1) {
    int64_t size = whole.shape.at(shard->axis) / shard->parts;
    box.lo[shard->axis] = tp * size;
    box.hi[shard->axis] = box.lo[shard->axis] + size;
  }
  if (info_.isExpertSharded(whole.name)) {
    auto [first, count] = info_.expertBlock(stage, replica);
    box.lo[0] = first;
    box.hi[0] = first + count;
  }
  if (blocks && info_.isShareSharded(whole.name)) {
    // Rows of the part (of the whole without tensor parallelism).
    het::ShareBlock mine = shareBlock(box.hi.at(0) - box.lo[0], stage, replica);
    box.lo[0] += mine.begin;
    box.hi[0] = box.lo[0] + mine.held;
  }
  return box;
}

const TensorInfo &PipelineRank::wholeOf(const std::string &name) const {
  if (auto it = stepIndex_.find(name); it != stepIndex_.end())
    return info_.inputs.at(it->second);
  if (auto it = persistentInfo_.find(name); it != persistentInfo_.end())
    return it->second;
  // (An idle rank, which holds nothing, still takes part in --save.)
  for (const TensorInfo &t : info_.inputs)
    if (t.name == name)
      return t;
  die("internal error: no step argument or state named '" + name + "'");
}

Buffer PipelineRank::placeState(const TensorInfo &whole, const Buffer &values,
                                const TensorInfo &local) const {
  const PipelineComm &comm = pipelineComm();
  Box held = heldBox(whole, comm.place.stage, comm.place.replica, comm.place.tp);
  // A block by batch share holds its real rows first, then zero rows up to
  // the block's length (the largest of its stage's blocks).
  std::vector<int64_t> shape = held.shape();
  bool block = info_.isShareSharded(whole.name);
  if (block && !local.shape.empty() && local.shape[0] >= shape.at(0))
    shape[0] = local.shape[0];
  if (shape != local.shape)
    die("internal error: this rank holds " + shapeText(held.shape()) + " of '" + whole.name +
        "' " + shapeText(whole.shape) + " (its tensor-parallel part and block by batch share), "
        "its stage code " + shapeText(local.shape));
  Buffer part(bytesOf(local));
  Box into = held; // the buffer: the held rows, then a block's padding
  if (!into.lo.empty())
    into.hi[0] = into.lo[0] + shape[0];
  copyRegion(static_cast<const uint8_t *>(values.memory.get()), Box::whole(whole.shape),
             static_cast<uint8_t *>(part.memory.get()), into, held, whole.elementBytes());
  return part;
}

/// This rank's persistent tensors as the checkpoint names them: by model
/// name, with the part of the whole it holds (a tensor-parallel part, a
/// block of rows by batch share, or a block of a part; a block's padding
/// rows are not state).
std::vector<NeededTensor> PipelineRank::heldTensors() const {
  const PipelineComm &comm = pipelineComm();
  std::vector<NeededTensor> held;
  for (const auto &[name, buffer] : persistent_) {
    const TensorInfo &t = persistentInfo_.at(name);
    const TensorInfo &whole = wholeOf(name);
    Box box = heldBox(whole, comm.place.stage, comm.place.replica, comm.place.tp);
    held.push_back({name, t.isInteger() ? "i64" : "f32", box.shape(), shardOf(box, whole.shape)});
  }
  return held;
}

/// The job layout a checkpoint records: which ranks write one, a digest of
/// who holds what (equal digests: the same stages, replicas and parts on
/// the same ranks) and a line for people.
void PipelineRank::describeLayout() {
  const PipelineComm &comm = pipelineComm();
  std::string key = "world " + std::to_string(comm.layout.ranks()) + ";";
  for (const StageInfo &st : info_.stages)
    key += st.name + " [" + std::to_string(st.layerBegin) + "," + std::to_string(st.layerEnd) +
           ") x" + std::to_string(st.replicas()) + " tp" + std::to_string(st.tensorParallel) + ";";
  // Sharded optimizer state: another layout, though the same ranks run
  // the same stages (a rank's directory no longer holds all it needs).
  if (!info_.shareSharded.empty())
    key += "share_sharded;";
  // Experts held in blocks: which replica holds which is the layout too.
  for (const StageInfo &st : info_.stages)
    for (const ReplicaGroupInfo &g : st.replicaGroups)
      if (g.experts > 0)
        key += st.name + ".experts" + std::to_string(g.experts) + "x" + std::to_string(g.count) + ";";
  writers_.clear();
  for (int r = 0; r < comm.layout.ranks(); ++r) {
    const RankPlace &p = comm.layout.place(r);
    if (p.idle())
      continue;
    key += std::to_string(r) + ":" + std::to_string(p.stage) + "." + std::to_string(p.replica) +
           "." + std::to_string(p.tp) + ";";
    writers_ += (writers_.empty() ? "" : ",") + std::to_string(r);
  }
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : key)
    h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  layoutId_ = hex;
  stagesText_.clear();
  for (const StageInfo &st : info_.stages)
    stagesText_ += (stagesText_.empty() ? "" : ", ") + st.name + " layers [" +
                   std::to_string(st.layerBegin) + ", " + std::to_string(st.layerEnd) + ") x " +
                   std::to_string(st.replicas()) +
                   (st.tensorParallel > 1 ? " x TP " + std::to_string(st.tensorParallel) : "");
}

ckpt::Snapshot PipelineRank::snapshot(int64_t step) const {
  ckpt::Snapshot snap;
  for (const NeededTensor &t : heldTensors()) {
    const Buffer &buffer = persistent_.at(t.name);
    TensorInfo info = persistentInfo_.at(t.name);
    info.shape = t.shape; // a block's real rows: the buffer's first ones
    if (info.isInteger())
      snap.put(t.name, "i64", buffer.i(), info.count(), info.shape);
    else
      snap.put(t.name, "f32", buffer.f(), info.count(), info.shape);
    snap.tensors[t.name].shape = info.shape; // put() makes a scalar's {} a {1}
    snap.tensors[t.name].shard = t.shard;
  }
  int64_t s = step;
  snap.put("het.step", "i64", &s, 1);
  snap.meta = {{"layout", layoutId_},
               {"writers", writers_},
               {"world", std::to_string(pipelineComm().layout.ranks())},
               {"stages", stagesText_},
               {"global_batch", std::to_string(info_.globalBatch)},
               {"samples", std::to_string(step * info_.globalBatch)}};
  return snap;
}

void PipelineRank::restore(const ReshardedState &state) {
  if (auto it = state.meta.find("global_batch");
      it != state.meta.end() && std::stoll(it->second) != info_.globalBatch)
    die("the checkpoint of step " + std::to_string(state.step) + " was written with global batch " +
        it->second + ", this pipeline's is " + std::to_string(info_.globalBatch) +
        ": each step would see other samples than the run that wrote it (plan with global batch " +
        it->second + ")");
  for (auto &[name, buffer] : persistent_) {
    const std::vector<uint8_t> &bytes = state.tensors.at(name);
    // A block by batch share holds its real rows first, then zeros.
    bool block = info_.isShareSharded(name) && bytes.size() < buffer.bytes;
    if (bytes.size() != buffer.bytes && !block)
      die("checkpoint tensor '" + name + "' has " + std::to_string(bytes.size()) +
          " bytes, the model's has " + std::to_string(buffer.bytes));
    std::memcpy(buffer.memory.get(), bytes.data(), bytes.size());
    std::memset(static_cast<unsigned char *>(buffer.memory.get()) + bytes.size(), 0,
                buffer.bytes - bytes.size());
  }
}

/// The MIN of every rank's proposal.
int64_t PipelineRank::agree(int64_t proposal) {
  PipelineComm &comm = pipelineComm();
  int64_t common = proposal;
  if (comm.world)
    checkCcl(hetcclAllReduce(&proposal, &common, 1, hetcclInt64, hetcclMin, comm.world),
             "agreeing on the checkpoint to resume from", comm.world);
  return common;
}

bool PipelineRank::stopsAfter(int64_t s) {
  if (!stopRequestsEnabled() || o_.checkpointDir.empty() || o_.checkpointEvery <= 0 ||
      (s + 1) % o_.checkpointEvery != 0 || s + 1 >= o_.steps)
    return false;
  PipelineComm &comm = pipelineComm();
  int32_t asked = stopRequested() ? 1 : 0, any = asked;
  if (comm.world)
    checkCcl(hetcclAllReduce(&asked, &any, 1, hetcclInt32, hetcclMax, comm.world),
             "agreeing whether to stop at the checkpoint of step " + std::to_string(s + 1),
             comm.world);
  return any != 0;
}

/// The number of steps done by the newest checkpoint under `root` that
/// every rank can take its state from (-1: none), whatever layout wrote it.
int64_t PipelineRank::resume(const std::string &root) {
  int rank = pipelineComm().rank;
  std::vector<NeededTensor> needs = heldTensors();
  auto load = [&](int64_t maxStep) {
    ReshardedState state;
    try {
      state = loadForLayout(root, rank, layoutId_, needs, maxStep);
    } catch (const std::exception &e) {
      die(std::string("resuming from ") + root + ": " + e.what());
    }
    for (const ckpt::Skipped &k : state.skipped)
      std::printf("resume: skipped checkpoint step %lld: %s\n", static_cast<long long>(k.step),
                  k.reason.c_str());
    return state;
  };
  ReshardedState mine = load(-1);
  // The newest step valid on every rank: each proposes its newest valid
  // step not after the candidate until the MIN stops moving. Every rank
  // sees the same candidates, so all make the same number of rounds.
  int64_t common = agree(mine.found ? mine.step : -1);
  while (common >= 0) {
    if (!(mine.found && mine.step == common))
      mine = load(common);
    int64_t next = agree(mine.found ? mine.step : -1);
    if (next == common)
      break;
    common = next;
  }
  if (common < 0) {
    std::printf("starting from scratch\n");
    return -1;
  }
  restore(mine);
  std::printf("resumed from step %lld (%s)\n", static_cast<long long>(mine.step), mine.how.c_str());
  return common;
}

/// Rank 0 gathers every stage's state (replica 0's parts of tensors split
/// over tensor-parallel devices; each replica's block of those held by
/// batch share or of stacked experts; an expert's own parameters from the
/// replica holding them) and writes one .npz.
void PipelineRank::saveAll(const std::string &path) {
  PipelineComm &comm = pipelineComm();
  eval::NamedArrays arrays;
  // Tensors of which several stages hold a copy that must be equal: a
  // tied parameter and its optimizer state (TiedParameters.h), a shared
  // counter (Adam's step). Copies that differ are an error, after the
  // file is written.
  std::string diverged;
  auto add = [&](const std::string &name, const TensorInfo &t, const void *data) {
    for (auto &[existing, array] : arrays)
      if (existing == name) {
        bool same = true;
        for (int64_t i = 0; i < t.count() && same; ++i)
          same = t.isInteger() ? array.integers[i] == static_cast<const int64_t *>(data)[i]
                               : static_cast<float>(array.floats[i]) ==
                                     static_cast<const float *>(data)[i];
        if (!same && diverged.empty())
          diverged = name;
        return;
      }
    eval::HostArray array;
    array.shape = t.shape;
    if (t.isInteger()) {
      array.kind = eval::ElementKind::I64;
      const auto *p = static_cast<const int64_t *>(data);
      array.integers.assign(p, p + t.count());
    } else {
      array.kind = eval::ElementKind::F32;
      const auto *p = static_cast<const float *>(data);
      array.floats.assign(p, p + t.count());
    }
    arrays.emplace_back(name, std::move(array));
  };
  for (size_t j = 0; j < info_.stages.size(); ++j) {
    const StageInfo &st = info_.stages[j];
    const int stage = static_cast<int>(j);
    // What the stage keeps, each with the first replica keeping it (with
    // expert parallelism replicas keep different experts).
    std::vector<std::pair<const TensorInfo *, int>> keptBy;
    int firstReplica = 0;
    for (const ReplicaGroupInfo &g : st.replicaGroups) {
      for (const TensorInfo *kept : st.variant(g.variant)->keptOutputs())
        if (std::none_of(keptBy.begin(), keptBy.end(),
                         [&](const auto &k) { return k.first->name == kept->name; }))
          keptBy.push_back({kept, firstReplica});
      firstReplica += g.count;
    }
    for (const auto &[kept, keeper] : keptBy) {
      TensorInfo whole = wholeOf(kept->name);
      whole.name = kept->name;
      const ShardInfo *shard = info_.shard(kept->name);
      int parts = shard ? shard->parts : 1;
      bool blocks = info_.isShareSharded(kept->name);
      bool everyReplica = blocks || info_.isExpertSharded(kept->name);
      int from = everyReplica ? 0 : keeper;
      int to = everyReplica ? comm.layout.replicas(stage) : keeper + 1;
      Buffer gathered(bytesOf(whole));
      for (int t = 0; t < parts; ++t)
        for (int r = from; r < to; ++r) {
          // The owner's part is the first bytes of its buffer (a block's
          // padding rows come last).
          Box box = heldBox(whole, stage, r, t);
          int owner = comm.layout.rankOf(stage, r, t);
          size_t bytes = static_cast<size_t>(box.volume()) * whole.elementBytes();
          const void *mine = comm.rank == owner ? persistent_.at(kept->name).memory.get() : nullptr;
          Buffer received(comm.rank == 0 && owner != 0 ? bytes : 0);
          if (comm.rank == owner && owner != 0)
            checkCcl(hetcclSend(mine, bytes, hetcclUint8, 0, comm.world),
                     "sending '" + kept->name + "' to rank 0", comm.world);
          if (comm.rank == 0 && owner != 0)
            checkCcl(hetcclRecv(received.memory.get(), bytes, hetcclUint8, owner, comm.world),
                     "receiving '" + kept->name + "' from rank " + std::to_string(owner),
                     comm.world);
          if (comm.rank == 0)
            copyRegion(static_cast<const uint8_t *>(owner == 0 ? mine : received.memory.get()),
                       box, static_cast<uint8_t *>(gathered.memory.get()),
                       Box::whole(whole.shape), box, whole.elementBytes());
        }
      if (comm.rank == 0)
        add(kept->name, whole, gathered.memory.get());
    }
  }
  if (comm.rank != 0)
    return;
  if (llvm::Error e = eval::writeNpz(path, arrays))
    die(llvm::toString(std::move(e)));
  std::printf("saved %zu arrays to %s\n", arrays.size(), path.c_str());
  if (!diverged.empty())
    die("the stages' copies of '" + diverged + "' differ (saved the first stage's): a tied "
        "parameter's copies must take the same updates");
}

} // namespace het::rt
