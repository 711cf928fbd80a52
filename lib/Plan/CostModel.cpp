//===- CostModel.cpp - roofline layers, alpha-beta links, 1F1B pipeline ---===//
#include "het/Plan/CostModel.h"

#include "het/Plan/Error.h"
#include "het/Plan/SharedHostSchedule.h"

#include <algorithm>
#include <cmath>

namespace het::plan {

TrainingSetup TrainingSetup::of(const ModelDesc &model, Precision precision) {
  TrainingSetup s;
  // Auto: an fp32 model trains in fp32; a 16- or 8-bit one in each kind's
  // best format.
  if (precision == Precision::Auto)
    precision = formatBytes(model.dtype) >= 4 ? Precision::FP32 : Precision::Mixed;
  s.precision = precision;
  return s;
}

double TrainingSetup::stateBytes(const std::string &format) const {
  int bytes = formatBytes(format);
  return stateBytesPerParam + (bytes > 0 && bytes < 4 ? bytes : 0);
}

CostModel::CostModel(const ModelDesc &model, const Cluster &cluster,
                     const ProfileSet *profiles, std::optional<TrainingSetup> setup)
    : modelDesc(model), clusterDesc(cluster), profiles(profiles),
      training(setup ? *setup : TrainingSetup::of(model)) {
  for (const DeviceGroup &g : cluster.groups) {
    std::string problem;
    std::string format = chooseFormat(*g.spec, training.precision, model.dtype, problem);
    // A 16-bit format asked for by name and missing is the user's error
    // now; fp32 missing matters only where no measured profile prices the
    // kind (table() says so then).
    bool forced16 = training.precision == Precision::BF16 || training.precision == Precision::FP16;
    if (format.empty() && forced16)
      fail(cluster.file, "group '" + g.name + "'",
           "kind " + g.kind + " " + problem + " (--precision " + toString(training.precision) +
               ")");
    groupFormats.push_back(format.empty() ? "fp32" : format);
  }
}

void CostModel::trainIn(const std::vector<std::string> &formats, const std::string &file) {
  for (size_t g = 0; g < formats.size() && g < groupFormats.size(); ++g) {
    if (formats[g].empty() || formats[g] == groupFormats[g])
      continue;
    const DeviceGroup &group = clusterDesc.groups[g];
    if (!group.spec->hasFormat(formats[g]))
      fail(file, "group '" + group.name + "'",
           "the plan trains kind " + group.kind + " in " + formats[g] + ", which it lacks (" +
               "its catalog entry's peak_tflops gives " + formatList(*group.spec) + ")");
    groupFormats[g] = formats[g];
  }
  cache.clear();
}

int CostModel::microBatchPerReplica(long globalBatch, int microBatches,
                                    int replicas) {
  long perMicro = globalBatch / std::max(1, microBatches);
  return int(std::max(1L, (perMicro + replicas - 1) / replicas));
}

double CostModel::tensorParallelShare(double whole, double atTwo, int degree) {
  if (degree <= 1)
    return 1;
  if (whole <= 0)
    return 1.0 / degree;
  double kept = std::clamp(2 * atTwo - whole, 0.0, whole);
  return (kept + (whole - kept) / degree) / whole;
}

double CostModel::tensorParallelAllReduce(double bytes, int tp, const Link &intra) const {
  // Measured on this host (het-tune stages), where the tensor-parallel
  // ranks are: a small all-reduce there costs what the ranks' wake-ups and
  // shared cores make it, far above the link's latency.
  if (communication && communication->allReduce) {
    double measured = communication->allReduce(bytes, tp);
    if (measured >= 0)
      return measured;
  }
  return ringAllReduceTime(bytes, tp, intra);
}

const LayerTable &CostModel::table(int g, int tp, int mbs, Recompute recompute) const {
  auto key = std::make_tuple(g, tp, mbs, recompute);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;

  const DeviceGroup &group = clusterDesc.groups[g];
  const DeviceSpec &spec = *group.spec;
  const size_t n = modelDesc.layers.size();
  std::vector<LayerTime> measured;
  LayerTime call;
  bool profiled = profiles && profiles->lookup(spec.name, tp, mbs, measured, call) &&
                  measured.size() == n;
  // A kind measured at tp 1 only (het-tune stages): its tp > 1 tables come
  // from those measurements, never from the roofline (whose rates for a
  // measured kind are timed anew by every process: DeviceCatalog::find).
  bool fromTp1 = !profiled && tp > 1 && profiles &&
                 profiles->lookup(spec.name, 1, mbs, measured, call) && measured.size() == n;
  profiled |= fromTp1;

  // The group's format sets the peak and the bytes an activation or a
  // weight copy takes (the model's figures are in its own dtype).
  const std::string &format = groupFormats[g];
  const double flops = spec.flops(format);
  if (!profiled && flops <= 0)
    fail(spec.file, "devices[" + spec.name + "].peak_tflops",
         "no figure for " + format + " to price it by (add one, or give --profiles for " +
             spec.name + ")");
  const double bw = spec.memoryBytesPerSecond();
  const double scale = double(formatBytes(format)) / modelDesc.bytesPerElement;
  const Link &intra = clusterDesc.link(g, g);

  LayerTable t;
  t.profiled = profiled;
  if (profiled)
    t.call = call;
  t.stateBytesPerParam = training.stateBytes(format);
  t.copyBytesPerParam = t.stateBytesPerParam - training.stateBytesPerParam;
  t.compute.assign(n + 1, 0);
  t.fwd.assign(n + 1, 0);
  t.update.assign(n + 1, 0);
  t.params.assign(n + 1, 0);
  t.stash.assign(n + 1, 0);
  t.passedStash.assign(n + 1, 0);
  t.inputStash.assign(n, 0);
  t.workingSet.assign(n, 0);
  t.data.assign(n + 1, 0);
  t.largestTensor.assign(n, 0);
  t.recomputesLayers = recompute == Recompute::Full;
  // How this kind runs het.attention in a planned pipeline (het-compile
  // fuses attention for every stage of an x86 build, whose GPU stages are
  // compiled from it too): oneDNN's kernel (local cpu.onednn) holds no
  // [.., Q, K] scores; every other kind's code writes het.attention as its
  // three ops again, in forward and backward functions apart, so the
  // backward recomputes the probabilities: the scores and the
  // probabilities, both f32, exist while the layer runs (a working set,
  // one layer at a time; bench/memory/predicted.py's GPT at sequence 256
  // on cpu.mlir measured 1.01x this, 1.22x with the probabilities alone).
  const bool scoresTransient = spec.localLibrary() != "dnnl";
  for (size_t i = 0; i < n; ++i) {
    const LayerDesc &l = modelDesc.layers[i];
    const double split = tp > 1 && l.statusAt(tp) == 's' ? tp : 1;
    double fwd, bwd, update;
    // Roofline: the slower of compute and memory traffic, per op when the
    // ops are known, else for the layer as a whole.
    auto roofline = [&](double f, double acts, double weights) {
      return std::max(f * mbs / split / flops, (weights + acts * mbs) * scale / split / bw);
    };
    double rooflineFwd = 0; // the forward's roofline time (without launches)
    if (!l.fwdOps.empty())
      for (const OpCost &op : l.fwdOps)
        rooflineFwd += roofline(op.flops, op.bytes, op.weightBytes);
    else
      rooflineFwd = roofline(l.fwdFlops, l.ioBytes, l.params * modelDesc.bytesPerElement);
    if (profiled) {
      fwd = measured[i].fwd;
      bwd = measured[i].bwd;
      update = measured[i].update;
      if (fromTp1) { // the layer's work over the tp ranks
        fwd /= split;
        bwd /= split;
        update /= split;
      }
    } else {
      if (!l.fwdOps.empty()) {
        fwd = bwd = 0;
        for (const OpCost &op : l.fwdOps) {
          fwd += roofline(op.flops, op.bytes, op.weightBytes);
          if (l.bwdOps.empty())
            bwd += roofline(2 * op.flops, 2 * op.bytes, 2 * op.weightBytes);
        }
        for (const OpCost &op : l.bwdOps)
          bwd += roofline(op.flops, op.bytes, op.weightBytes);
      } else {
        double weights = l.params * modelDesc.bytesPerElement;
        fwd = roofline(l.fwdFlops, l.ioBytes, weights);
        bwd = roofline(l.bwdFlops, 2 * l.ioBytes, 2 * weights);
      }
      // Every kernel pays a fixed launch cost however small it is.
      fwd += l.fwdKernels * spec.kernelOverheadSeconds;
      bwd += l.bwdKernels * spec.kernelOverheadSeconds;
      // The optimizer also writes the 16-bit copy the next forward reads.
      update = l.params / split *
               (training.optimizerBytesPerParam + t.stateBytesPerParam -
                training.stateBytesPerParam) /
               bw;
    }
    // Megatron: a split layer all-reduces its output twice forward and
    // twice backward (a profile measured at this degree has them already;
    // one derived from tp 1 does not).
    if (split > 1 && (fromTp1 || (!profiled && l.params > 0))) {
      double ar = tensorParallelAllReduce(l.outputBytes * mbs, tp, intra);
      fwd += 2 * ar;
      bwd += 2 * ar;
    }
    // The probabilities are f32 in every format (softmax is on autocast's
    // f32 list); tensor parallelism splits them by heads.
    double scores = l.attentionProbabilityBytes / split;
    // What the backward keeps and holds: as analysed in this format (a
    // 16-bit kind's autocast step keeps bf16 copies beside f32 results),
    // else the model's figures at the format's width.
    const bool lowFigures = scale < 1 && l.lowPrecision.analysed;
    const double width = lowFigures ? 1.0 : scale;
    // Under tensor parallelism each rank holds the part of each figure that
    // does not split whole (no sequence parallelism), 1/split of the rest.
    const LayerDesc::SplitInTwo &two = l.splitInTwo;
    auto share = [&](double whole, double atTwo) {
      return tensorParallelShare(whole, two.analysed ? atTwo : whole / 2, int(split));
    };
    double stash = (lowFigures ? l.lowPrecision.stashBytes : l.stashBytes) * width *
                   share(l.stashBytes, two.stashBytes);
    double passed = (lowFigures ? l.lowPrecision.passedStashBytes : l.passedStashBytes) * width *
                    share(l.passedStashBytes, two.passedStashBytes);
    double input = (lowFigures ? l.lowPrecision.inputStashBytes : l.inputStashBytes) * width *
                   share(l.inputStashBytes, two.inputStashBytes);
    if (scoresTransient)
      t.workingSet[i] = 2 * scores;
    // Its backward's activation gradients. A 16-bit kind computes the ops
    // without a 16-bit kernel in f32 between casts (docs/precision.md),
    // holding f32 copies while they run: the f32 step's figure at least.
    t.workingSet[i] +=
        (lowFigures ? std::max(l.lowPrecision.gradientBytes, l.gradientBytes) : l.gradientBytes * scale) *
        share(l.gradientBytes, two.gradientBytes);
    if (recompute == Recompute::Selective && l.selective.analysed) {
      // het-recompute's selective mode, as analysed: the products' results
      // stay, the backward recomputes the cheap rest (its share of the
      // forward by the roofline, as a share of this kind's forward time).
      const LayerDesc::Selective &kept = l.selective;
      stash = kept.stashBytes * scale * share(l.stashBytes, two.stashBytes);
      passed = kept.passedStashBytes * scale * share(l.passedStashBytes, two.passedStashBytes);
      input = kept.inputStashBytes * scale * share(l.inputStashBytes, two.inputStashBytes);
      t.workingSet[i] = (scoresTransient ? 2 * scores : 0) +
                        kept.gradientBytes * scale * share(l.gradientBytes, two.gradientBytes);
      if (rooflineFwd > 0)
        bwd += fwd * std::min(1.0, roofline(kept.recomputedFlops, kept.recomputedBytes, 0) /
                                       rooflineFwd);
    }
    if (recompute == Recompute::Full) {
      // Its recomputed stash and, beside it, its scores and probabilities.
      t.workingSet[i] += stash;
      // The layer's input stays (the previous layer's output; the data for
      // the first), and its forward runs again before its backward.
      // (Whole on every tensor-parallel rank: a split layer's output is
      // all-reduced.)
      stash = std::min(stash, i > 0 ? modelDesc.layers[i - 1].outputBytes * scale : 0.0);
      passed = input = 0;
      bwd += fwd;
    }
    t.compute[i + 1] = t.compute[i] + fwd + bwd;
    t.fwd[i + 1] = t.fwd[i] + fwd;
    t.update[i + 1] = t.update[i] + update;
    t.params[i + 1] = t.params[i] + l.params / split;
    t.stash[i + 1] = t.stash[i] + stash - passed;
    t.passedStash[i + 1] = t.passedStash[i] + passed;
    t.inputStash[i] = input;
    t.data[i + 1] = t.data[i] + l.dataBytes;
    for (double elements : l.paramTensors)
      t.largestTensor[i] = std::max(t.largestTensor[i], elements / split);
    if (l.paramTensors.empty()) // a model JSON: one matrix of the layer's
      t.largestTensor[i] = l.params / split;
  }
  t.workingSetMax = RangeMax(t.workingSet);
  t.largestTensorMax = RangeMax(t.largestTensor);
  std::vector<double> layerParams(n);
  for (size_t i = 0; i < n; ++i)
    layerParams[i] = t.params[i + 1] - t.params[i];
  t.largestLayerMax = RangeMax(layerParams);
  return cache.emplace(key, std::move(t)).first->second;
}

int CostModel::StageContext::replicas() const {
  int total = 0;
  for (const Member &m : members)
    total += m.replicas;
  return total;
}

std::vector<int> CostModel::StageContext::groups() const {
  std::vector<int> out;
  for (const Member &m : members)
    out.push_back(m.group);
  return out;
}

std::vector<const LayerTable *> CostModel::tables(const StageContext &ctx) const {
  std::vector<const LayerTable *> out;
  for (const Member &m : ctx.members)
    out.push_back(&table(m.group, ctx.tp, m.mbs, ctx.recompute));
  return out;
}

bool CostModel::oneNode(const std::vector<int> &groups) const {
  // Groups of one node template with a count of one share that node.
  for (int g : groups)
    if (clusterDesc.groups[g].nodes != 1 ||
        clusterDesc.groups[g].nodeTemplate != clusterDesc.groups[groups.front()].nodeTemplate)
      return false;
  return !groups.empty();
}

double CostModel::measuredSync(int b, int e, int replicas) const {
  // The replicas reach their sync at different times: the first message
  // wakes a waiting rank; the all-reduces then follow one another.
  double total = 0;
  bool first = true;
  for (int i = b; i < e; ++i) {
    const LayerDesc &l = modelDesc.layers[i];
    std::vector<double> tensors = l.paramTensors;
    if (tensors.empty() && l.params > 0)
      tensors.push_back(l.params);
    for (double elements : tensors) {
      double bytes = elements * training.gradientBytesPerParam;
      double t = communication->allReduce(bytes, replicas);
      if (t < 0)
        return -1;
      if (first) {
        double wake = communication->message(bytes / replicas);
        if (wake < 0)
          return -1;
        total += wake;
        first = false;
      }
      total += t;
    }
  }
  return total;
}

double CostModel::boundaryTime(int layer, const StageContext &ctx, bool next) const {
  std::vector<int> own;
  for (const Member &m : ctx.members)
    own.push_back(m.replicas);
  return next ? boundaryTime(layer, ctx.samples, ctx.groups(), ctx.replicas(), ctx.nextGroups,
                             ctx.nextReplicas, own, ctx.nextGroupReplicas)
              : boundaryTime(layer, ctx.samples, ctx.groups(), ctx.replicas(), ctx.prevGroups,
                             ctx.prevReplicas, own, ctx.prevGroupReplicas);
}

double CostModel::boundaryTime(int layer, long samples, const std::vector<int> &a, int ra,
                               const std::vector<int> &b, int rb,
                               const std::vector<int> &aReplicas,
                               const std::vector<int> &bReplicas) const {
  if (layer <= 0 || layer >= int(modelDesc.layers.size()))
    return 0;
  // Activations and their gradients cross at the stages' width when every
  // group on both sides trains at one (16-bit messages move as they are,
  // fp16 next to bf16 included); where f32 meets 16-bit, f32. (A stage
  // whose replicas train in different 16-bit formats sends f32 forward,
  // het-autocast's f32 boundaries; it is priced at 16 bits here.)
  int width = 0;
  for (const std::vector<int> *side : {&a, &b})
    for (int g : *side) {
      int w = formatBytes(groupFormats[size_t(g)]);
      width = width == 0 || width == w ? w : 4;
    }
  double scale = width > 0 ? double(width) / modelDesc.bytesPerElement : 1.0;
  double bytes = modelDesc.layers[layer - 1].outputBytes * samples * scale;
  if (bytes <= 0)
    return 0;
  if (communication && communication->message) {
    std::vector<int> both = a;
    both.insert(both.end(), b.begin(), b.end());
    if (oneNode(both)) {
      // Every pair of replicas that shares samples exchanges its part: the
      // largest part sets the time.
      double t = communication->message(bytes / std::max(1, std::min(ra, rb)));
      if (t >= 0)
        return t;
    }
  }
  // The slowest of the links between the two stages' groups. Streams that
  // leave a node over the network share its NIC: as many as the busier
  // end's node holds replicas -- of that group: a stage whose replicas span
  // several kinds has only its replicas of a kind on that kind's nodes.
  int streams = std::max(1, std::min(ra, rb));
  double slowest = INFINITY, latency = 0;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k) {
      int x = a[i], y = b[k];
      int onX = i < aReplicas.size() ? aReplicas[i] : ra;
      int onY = k < bReplicas.size() ? bReplicas[k] : rb;
      Link l = clusterDesc.farthest(x, y);
      if (clusterDesc.crossesNodes(x, y))
        l.bandwidthGbps /= std::min(streams, std::max(replicasPerNode(x, onX), replicasPerNode(y, onY)));
      if (l.bytesPerSecond() < slowest) {
        slowest = l.bytesPerSecond();
        latency = l.latencySeconds();
      }
    }
  return latency + bytes / (streams * slowest);
}

int CostModel::replicasPerNode(int g, int replicas) const {
  const DeviceGroup &group = clusterDesc.groups[g];
  int nodes = std::max(1, group.nodes);
  return std::max(1, std::min(replicas, (replicas + nodes - 1) / nodes));
}

double CostModel::syncTime(const std::vector<Member> &members, int tp, double params,
                           AllReduceAlgorithm algorithm) const {
  int replicas = 0;
  for (const Member &m : members)
    replicas += m.replicas;
  double bytes = params * training.gradientBytesPerParam;
  // Each of the tp ranks of a replica all-reduces its own shard at the same
  // time: tp collectives share every node's NIC.
  auto overNic = [&](Link l) {
    l.bandwidthGbps /= std::max(1, tp);
    return l;
  };
  if (members.size() == 1) {
    int g = members.front().group;
    const DeviceGroup &group = clusterDesc.groups[g];
    int perNode = std::max(1, group.devicesPerNode / tp);
    const Link &intra = clusterDesc.link(g, g);
    const Link inter = clusterDesc.crossesNodes(g, g) ? overNic(clusterDesc.farthest(g, g)) : intra;
    return allReduceTime(algorithm, bytes, replicas, perNode, intra, inter);
  }
  // Replicas of several kinds: one flat collective over the slowest link
  // between any two of them.
  Link slowest;
  bool any = false;
  for (const Member &x : members)
    for (const Member &y : members) {
      if (x.group == y.group && x.replicas < 2)
        continue;
      Link l = clusterDesc.farthest(x.group, y.group);
      if (clusterDesc.crossesNodes(x.group, y.group))
        l = overNic(l);
      if (!any || l.bytesPerSecond() < slowest.bytesPerSecond())
        slowest = l;
      any = true;
    }
  return allReduceTime(algorithm, bytes, replicas, 1, slowest, slowest);
}

AllReduceAlgorithm CostModel::bestAlgorithm(const std::vector<Member> &members, int tp,
                                            double params) const {
  AllReduceAlgorithm best = AllReduceAlgorithm::Ring;
  double bestTime = syncTime(members, tp, params, best);
  for (auto a : {AllReduceAlgorithm::Tree, AllReduceAlgorithm::Hierarchical}) {
    double t = syncTime(members, tp, params, a);
    if (t < bestTime) {
      bestTime = t;
      best = a;
    }
  }
  return best;
}

double CostModel::capacityBytes(int g) const {
  return clusterDesc.groups[g].spec->memoryGib * double(1ull << 30) *
         (1 - training.memoryReserve);
}

double CostModel::zeroTraffic(int zero, int microBatches) {
  double m = std::max(1, microBatches);
  switch (zero) {
  case 2: return (m + 1) / 2;
  case 3: return (3 * m + 1) / 2;
  default: return 1;
  }
}

double CostModel::StageContext::fraction(size_t k) const {
  if (replicas() < 2 || samples <= 0)
    return 1;
  return double(members.at(k).mbs) / double(samples);
}

int CostModel::StageContext::expertsHeld() const {
  int held = 0;
  for (const Member &m : members)
    held += m.experts * m.replicas;
  return held;
}

double CostModel::StageContext::expertFraction(size_t k) const {
  int held = expertsHeld();
  return held > 0 ? double(members.at(k).experts) / double(held) : 1.0;
}

namespace {
/// What expert parallelism divides in a stage over layers [b, e).
struct ExpertShare {
  double params = 0, fwdFlops = 0, bwdFlops = 0, allFwd = 0, allBwd = 0, exchangeBytes = 0;
  int layers = 0;
  ExpertShare(const ModelDesc &model, int b, int e) {
    for (int i = b; i < e; ++i) {
      const LayerDesc &l = model.layers[i];
      params += l.experts.params;
      fwdFlops += l.experts.fwdFlops;
      bwdFlops += l.experts.bwdFlops;
      allFwd += l.fwdFlops;
      allBwd += l.bwdFlops;
      exchangeBytes += l.experts.exchangeBytes;
      layers += l.experts.count > 0;
    }
  }
};
} // namespace

double CostModel::expertExchangeTime(const StageContext &ctx, int b, int e, size_t k) const {
  ExpertShare share(modelDesc, b, e);
  if (ctx.expertsHeld() == 0 || share.layers == 0)
    return 0;
  // Member k sends the rows of its tokens whose experts others hold and
  // receives the others' rows of its own experts (balanced routing), over
  // the slowest link among the stage's groups; each exchange is two
  // all-to-alls (the counts, then the rows) per layer.
  double held = ctx.expertFraction(k);
  double mbs = ctx.members[k].mbs, samples = double(ctx.samples);
  double out = share.exchangeBytes * mbs * (1 - held);
  double in = share.exchangeBytes * std::max(0.0, samples - mbs) * held;
  double bandwidth = INFINITY, latency = 0;
  for (const Member &a : ctx.members)
    for (const Member &c : ctx.members) {
      const Link &l = clusterDesc.links[a.group][c.group];
      bandwidth = std::min(bandwidth, l.bandwidthGbps * 1e9 / 8);
      latency = std::max(latency, l.latencyUs * 1e-6);
    }
  double alpha = 2 * latency * share.layers, beta = std::max(out, in) / bandwidth;
  // On one node measured collectives price the fixed costs better than
  // the links' latency: an all-reduce of the counts per all-to-all, and
  // one of the rows (a ring all-reduce moves about what an all-to-all
  // does).
  std::vector<int> groups;
  for (const Member &m : ctx.members)
    groups.push_back(m.group);
  if (communication && communication->allReduce && oneNode(groups)) {
    double counts = communication->allReduce(8.0 * ctx.expertsHeld(), ctx.replicas());
    double rows = communication->allReduce(std::max({out, in, 4.0}), ctx.replicas());
    if (counts >= 0 && rows >= 0) {
      alpha = (counts + rows) * share.layers;
      beta = 0;
    }
  }
  return alpha + beta;
}

StageMemory LayerTable::memory(double params, double stash, double data, double working,
                               double largest, double largestLayer,
                               const MemoryPlace &at) const {
  // fp32 weights and gradients, 4 bytes each; what ZeRO shards of each
  // (LayerTable::stateBytes). The 16-bit copy stays whole.
  auto held = [&](int level) { return at.zero >= level ? at.fraction : 1.0; };
  const double optimizer = stateBytesPerParam - 8 - copyBytesPerParam;
  StageMemory m;
  m.parameters = params * (4 * held(3) + copyBytesPerParam);
  m.gradients = params * 4 * held(2);
  m.optimizerState = params * optimizer * held(1);
  m.activations = double(at.inFlight) * at.mbs * stash;
  m.batchData = double(at.microBatches) * at.mbs * data;
  m.gradientResults = at.microBatches > 1 ? m.gradients : 0;
  // Under ZeRO-2 one whole gradient waits for its reduce-scatter; under
  // ZeRO-3 with full recomputation a layer's gathered weights stay whole
  // from its recomputed forward to the end of its backward (without
  // recomputation each is gathered just before its use and freed after).
  double whole = at.zero >= 2 ? largest : 0;
  if (at.zero >= 3 && recomputesLayers)
    whole += largestLayer;
  m.workingSet = double(at.mbs) * working + 4 * whole;
  m.updateWorkingSet = at.zero >= 1 ? 4 * largest * at.fraction : 0;
  return m;
}

StageMemory CostModel::memory(const LayerTable &t, int b, int e, const StageContext &ctx,
                              size_t k) const {
  LayerTable::MemoryPlace at{ctx.members.at(k).mbs, ctx.inFlight, ctx.microBatches, ctx.zero,
                             ctx.fraction(k)};
  // (A copy of a tied parameter whose first layer is in an earlier stage
  // is held here too, with its gradient and optimizer state.)
  // Expert parallelism: the member holds its block of the experts. (The
  // planner's search calls this for every candidate: the layers are read
  // only for stages that have it.)
  double experts = ctx.expertsHeld() > 0
                       ? ExpertShare(modelDesc, b, e).params * (1 - ctx.expertFraction(k))
                       : 0;
  return t.memory(t.range(t.params, b, e) - experts + modelDesc.tiedCopyElements(b, e),
                  t.stashOf(b, e),
                  t.range(t.data, b, e),
                  t.workingSetPeak(b, e), t.largestTensorOf(b, e), t.largestLayerOf(b, e), at);
}

StageCost CostModel::stageCost(const std::vector<const LayerTable *> &tables,
                               const StageContext &ctx, int b, int e,
                               AllReduceAlgorithm *chosen) const {
  StageCost c;
  // Replicas work in parallel: the slowest member sets the stage's time,
  // and each must fit in its own device's memory.
  double worstExcess = -INFINITY;
  const bool experts = ctx.expertsHeld() > 0;
  const ExpertShare share = experts ? ExpertShare(modelDesc, b, e) : ExpertShare(modelDesc, b, b);
  for (size_t k = 0; k < ctx.members.size(); ++k) {
    const LayerTable &t = *tables[k];
    double fwd = t.stageFwd(b, e), bwd = t.stageCompute(b, e) - fwd;
    double update = t.stageUpdate(b, e);
    if (experts) {
      // Expert parallelism: the member runs its experts over every
      // replica's tokens routed to them (its fraction of the micro-batch's
      // expert work, not of its share's), updates its experts only, and
      // exchanges rows twice each way per micro-batch.
      double scale = ctx.expertFraction(k) / ctx.fraction(k);
      double xf = share.allFwd > 0 ? share.fwdFlops / share.allFwd : 0;
      double xb = share.allBwd > 0 ? share.bwdFlops / share.allBwd : 0;
      double exchange = expertExchangeTime(ctx, b, e, k);
      fwd = fwd * (1 - xf + xf * scale) + 2 * exchange;
      bwd = bwd * (1 - xb + xb * scale) + 2 * exchange;
      double params = t.range(t.params, b, e);
      if (params > 0)
        update *= 1 - share.params / params * (1 - ctx.expertFraction(k));
    }
    if (fwd + bwd > c.fwd + c.bwd) {
      c.fwd = fwd;
      c.bwd = bwd;
    }
    c.update = std::max(c.update, update + tiedCopyUpdate(t, b, e));
    StageMemory memory = this->memory(t, b, e, ctx, k);
    double capacity = capacityBytes(ctx.members[k].group);
    if (memory.peak() - capacity > worstExcess) {
      worstExcess = memory.peak() - capacity;
      c.memory = memory;
      c.capacityBytes = capacity;
    }
  }
  // Each stage pays for what it sends: activations forward, gradients back.
  if (!ctx.nextGroups.empty())
    c.p2p += boundaryTime(e, ctx, /*next=*/true);
  if (!ctx.prevGroups.empty())
    c.p2p += boundaryTime(b, ctx, /*next=*/false);
  c.tiedSync = tiedSync(ctx, b, e);
  c.sync = stageSync(tables, ctx, b, e, chosen) + c.tiedSync;
  return c;
}

double CostModel::tiedCopyUpdate(const LayerTable &t, int b, int e) const {
  // At the update's speed per parameter in the tie's first layer.
  double seconds = 0;
  for (const ModelDesc::Tie &tie : modelDesc.ties) {
    int f = tie.layers.front();
    double params = t.range(t.params, f, f + 1);
    if (params > 0 && tie.copiedInto(b, e))
      seconds += t.range(t.update, f, f + 1) / params * tie.elements;
  }
  return seconds;
}

double CostModel::tiedSync(const StageContext &ctx, int b, int e) const {
  // One all-reduce per step of each tied parameter's gradient over every
  // rank of the stages holding a copy. The split search prices a stage
  // without the others, so the collective is taken over twice this
  // stage's ranks on its own links (two holders alike; the partner's
  // link is not known here).
  double elements = modelDesc.tiedExchangeElements(b, e);
  if (elements <= 0)
    return 0;
  std::vector<Member> both = ctx.members;
  for (Member &m : both)
    m.replicas *= 2;
  return syncTime(both, 1, elements, AllReduceAlgorithm::Ring);
}

double CostModel::stageSync(const std::vector<const LayerTable *> &tables,
                            const StageContext &ctx, int b, int e,
                            AllReduceAlgorithm *chosen) const {
  const LayerTable &first = *tables.front();
  // Expert parallelism: the experts' gradients stay on their replicas.
  const bool experts = ctx.expertsHeld() > 0;
  double params =
      first.range(first.params, b, e) - (experts ? ExpertShare(modelDesc, b, e).params : 0);
  AllReduceAlgorithm algorithm =
      ctx.bestAlgorithm ? bestAlgorithm(ctx.members, ctx.tp, params) : ctx.algorithm;
  if (chosen)
    *chosen = algorithm;
  // The runtime reduces the gradients tensor by tensor (and under ZeRO
  // reduce-scatters and gathers each tensor once per micro-batch), so
  // every collective after the first pays the all-reduce's fixed latency
  // again: an all-reduce of one element.
  double tensors = 0;
  for (int i = b; i < e; ++i)
    tensors += std::max<double>(modelDesc.layers[i].paramTensors.size(),
                                modelDesc.layers[i].params > 0 ? 1 : 0);
  double latency =
      ctx.replicas() > 1 ? syncTime(ctx.members, ctx.tp, 1, algorithm) * std::max(0.0, tensors - 1)
                         : 0;
  double sync = (syncTime(ctx.members, ctx.tp, params, algorithm) + latency) *
                zeroTraffic(ctx.zero, ctx.microBatches);
  if (communication && communication->allReduce && ctx.tp == 1 && ctx.replicas() > 1 &&
      oneNode(ctx.groups()) && !experts) {
    double measured = measuredSync(b, e, ctx.replicas());
    // The last stage also combines the step's loss over its replicas.
    double loss = ctx.nextGroups.empty() ? communication->allReduce(8, ctx.replicas()) : 0;
    if (measured >= 0 && loss >= 0)
      sync = measured * zeroTraffic(ctx.zero, ctx.microBatches) + loss;
  }
  return sync;
}

CostModel::StageContext CostModel::contextOf(const Plan &plan, int j) const {
  const int S = int(plan.stages.size());
  const StagePlan &s = plan.stages[j];
  StageContext ctx;
  ctx.tp = s.tensorParallel;
  for (const ReplicaGroupPlan &g : s.replicaGroups)
    ctx.members.push_back(
        {g.group, g.replicas,
         g.samples > 0 ? g.samples
                       : microBatchPerReplica(plan.globalBatch, plan.microBatches,
                                              s.replicas()),
         g.experts});
  auto groupsOf = [](const StagePlan &st, std::vector<int> &groups, std::vector<int> &replicas) {
    for (const ReplicaGroupPlan &g : st.replicaGroups) {
      groups.push_back(g.group);
      replicas.push_back(g.replicas);
    }
  };
  if (j > 0) {
    groupsOf(plan.stages[j - 1], ctx.prevGroups, ctx.prevGroupReplicas);
    ctx.prevReplicas = plan.stages[j - 1].replicas();
  }
  if (j + 1 < S) {
    groupsOf(plan.stages[j + 1], ctx.nextGroups, ctx.nextGroupReplicas);
    ctx.nextReplicas = plan.stages[j + 1].replicas();
  }
  ctx.samples = plan.globalBatch / std::max(1, plan.microBatches);
  ctx.inFlight = std::min(S - j, plan.microBatches);
  ctx.bestAlgorithm = false;
  ctx.algorithm = s.allReduce;
  ctx.recompute = s.recompute;
  ctx.zero = s.builtZero();
  ctx.microBatches = std::max(1, plan.microBatches);
  return ctx;
}

bool CostModel::sharedHostStages(const Plan &plan, const std::vector<StageCost> &costs,
                                 std::vector<SharedHostStage> &shared, int &cores) const {
  if (!communication || communication->cores <= 0)
    return false;
  const int S = int(plan.stages.size());
  std::vector<int> groups;
  shared.assign(S, SharedHostStage());
  int ranks = 0;
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    StageContext ctx = contextOf(plan, j);
    std::vector<const LayerTable *> t = tables(ctx);
    for (size_t k = 0; k < ctx.members.size(); ++k) {
      groups.push_back(ctx.members[k].group);
      double fwd = t[k]->stageFwd(s.layerBegin, s.layerEnd);
      double bwd = t[k]->stageCompute(s.layerBegin, s.layerEnd) - fwd;
      for (int r = 0; r < ctx.members[k].replicas * s.tensorParallel; ++r) {
        shared[j].fwd.push_back(fwd);
        shared[j].bwd.push_back(bwd);
        ++ranks;
      }
    }
    if (j + 1 < S)
      shared[j].messageToNext = boundaryTime(s.layerEnd, ctx, /*next=*/true);
    if (size_t(j) < costs.size())
      shared[j].finish = costs[j].sync + costs[j].update;
  }
  cores = communication->cores;
  return ranks > cores && oneNode(groups);
}

Evaluation CostModel::evaluate(const Plan &plan) const {
  Evaluation ev;
  const int S = int(plan.stages.size());
  const int L = int(modelDesc.layers.size());
  auto invalid = [&](const std::string &why) {
    ev.fits = false;
    ev.problem = why;
    ev.iterationTime = INFINITY;
    return ev;
  };
  if (S == 0)
    return invalid("the plan has no stages");
  if (plan.microBatches < 1 || plan.globalBatch % plan.microBatches != 0)
    return invalid("micro_batches must divide the global batch");
  const long samples = plan.globalBatch / plan.microBatches;
  std::vector<int> used(clusterDesc.groups.size(), 0);
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    std::string at = "stage " + std::to_string(j) + ": ";
    if (s.layerBegin != (j == 0 ? 0 : plan.stages[j - 1].layerEnd) ||
        s.layerEnd <= s.layerBegin)
      return invalid(at + "layer ranges must be contiguous and non-empty");
    if (s.replicaGroups.empty())
      return invalid(at + "has no replicas");
    long shares = 0;
    for (const ReplicaGroupPlan &m : s.replicaGroups) {
      const DeviceGroup &g = clusterDesc.groups[m.group];
      if (s.tensorParallel < 1 || g.devicesPerNode % s.tensorParallel != 0)
        return invalid(at + "tensor_parallel must divide the devices per node (" +
                       std::to_string(g.devicesPerNode) + ") of group '" + g.name + "'");
      if (m.replicas < 1)
        return invalid(at + "replicas must be >= 1");
      used[m.group] += m.replicas * s.tensorParallel;
      shares += long(m.replicas) * m.samples;
    }
    if (!modelDesc.tensorParallelFits(s.layerBegin, s.layerEnd, s.tensorParallel))
      return invalid(at + "tensor_parallel " + std::to_string(s.tensorParallel) +
                     " splits none of its layers or does not divide one's attention heads");
    if (s.tensorParallel > 1 && !modelDesc.keepsTiedLayers(s.layerBegin, s.layerEnd))
      return invalid(at + "tensor_parallel " + std::to_string(s.tensorParallel) +
                     " with layers [" + std::to_string(s.layerBegin) + ", " +
                     std::to_string(s.layerEnd) +
                     ") that share a parameter (tied weights) with another stage's: the copies "
                     "of a tied parameter are kept whole; plan this stage without "
                     "tensor_parallel or with all of the tied layers");
    // Mixture-of-experts layers run on CPU kinds only (their kernels are
    // libhetrt's and oneDNN's; a GPU build refuses them).
    for (const ReplicaGroupPlan &m : s.replicaGroups) {
      const DeviceGroup &g = clusterDesc.groups[m.group];
      if (g.spec->vendor == "cpu")
        continue;
      for (int i = s.layerBegin; i < s.layerEnd && i < L; ++i)
        if (modelDesc.layers[i].experts.count > 0)
          return invalid(at + "layer " + std::to_string(i) +
                         " is a mixture of experts, which has no GPU kernels yet; group '" +
                         g.name + "' (" + g.kind + ") cannot run it");
    }
    if (s.expertParallel()) {
      // What het-compile builds: every replica holds experts, of every
      // mixture-of-experts layer of the stage, all of them.
      int held = 0;
      for (const ReplicaGroupPlan &m : s.replicaGroups) {
        if (m.experts < 1)
          return invalid(at + "experts: with expert parallelism every replica group holds "
                              "experts");
        held += m.experts * m.replicas;
      }
      if (s.tensorParallel > 1 || s.builtZero() > 0)
        return invalid(at + "experts: expert parallelism with tensor parallelism or ZeRO is "
                            "not supported yet");
      int layers = 0;
      for (int i = s.layerBegin; i < s.layerEnd; ++i) {
        int count = modelDesc.layers[i].experts.count;
        if (count == 0)
          continue;
        ++layers;
        if (count != held)
          return invalid(at + "experts: the replicas hold " + std::to_string(held) +
                         " experts in all, but layer " + std::to_string(i) + " has " +
                         std::to_string(count));
      }
      if (layers == 0)
        return invalid(at + "experts: its layers have no mixture of experts");
    }
    if (s.replicas() > samples)
      return invalid(at + std::to_string(s.replicas()) +
                     " replicas cannot each take a sample of a micro-batch of " +
                     std::to_string(samples));
    if (s.explicitShares() && shares != samples)
      return invalid(at + "the replicas' shares add up to " + std::to_string(shares) +
                     " samples, not the micro-batch's " + std::to_string(samples));
  }
  for (size_t g = 0; g < plan.formats.size() && g < groupFormats.size(); ++g)
    if (!plan.formats[g].empty() && plan.formats[g] != groupFormats[g])
      return invalid("group '" + clusterDesc.groups[g].name + "' trains in " + plan.formats[g] +
                     " by the plan but is priced in " + groupFormats[g] +
                     " (CostModel::trainIn takes a plan's formats)");
  if (plan.stages.back().layerEnd != L)
    return invalid("the stages must cover all " + std::to_string(L) +
                   " layers");
  for (size_t g = 0; g < used.size(); ++g)
    if (used[g] > clusterDesc.groups[g].count())
      return invalid("group '" + clusterDesc.groups[g].name + "' has " +
                     std::to_string(clusterDesc.groups[g].count()) +
                     " devices but the plan uses " + std::to_string(used[g]));

  double sum = 0, maxT = -1, maxSync = 0;
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    StageContext ctx = contextOf(plan, j);
    StageCost c = stageCost(tables(ctx), ctx, s.layerBegin, s.layerEnd);
    if (c.memoryBytes() > c.capacityBytes) {
      ev.fits = false;
      ev.worstShortfallBytes =
          std::max(ev.worstShortfallBytes, c.memoryBytes() - c.capacityBytes);
    }
    sum += c.time();
    if (c.time() > maxT) {
      maxT = c.time();
      ev.bottleneck = j;
    }
    maxSync = std::max(maxSync, c.sync + c.update);
    ev.stages.push_back(c);
  }
  ev.pipelineTime = sum + (plan.microBatches - 1) * maxT;
  std::vector<SharedHostStage> shared;
  int cores = 0;
  if (sharedHostStages(plan, ev.stages, shared, cores)) {
    // Ranks on one host that outnumber its cores take turns: simulate the
    // schedule on the shared cores instead of the closed form. Each
    // stage's sync and update run after its own last backward, beside the
    // other stages' backwards; the report splits the iteration into the
    // pipeline and what the syncs add to it.
    ev.sharedCoresTime = simulateSharedHost(shared, plan.microBatches, cores);
    for (SharedHostStage &stage : shared)
      stage.finish = 0;
    ev.pipelineTime = simulateSharedHost(shared, plan.microBatches, cores);
    maxSync = std::max(0.0, ev.sharedCoresTime - ev.pipelineTime);
  }
  ev.syncTime = maxSync;
  ev.iterationTime = ev.pipelineTime + ev.syncTime;
  if (!ev.fits)
    ev.problem = "does not fit in device memory";
  return ev;
}

} // namespace het::plan
