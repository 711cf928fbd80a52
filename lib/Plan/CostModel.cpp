//===- CostModel.cpp - roofline layers, alpha-beta links, 1F1B pipeline ---===//
#include "het/Plan/CostModel.h"

#include <algorithm>
#include <cmath>

namespace het::plan {

CostModel::CostModel(const ModelDesc &model, const Cluster &cluster,
                     const ProfileSet *profiles, TrainingSetup setup)
    : modelDesc(model), clusterDesc(cluster), profiles(profiles),
      training(setup) {}

int CostModel::microBatchPerReplica(long globalBatch, int microBatches,
                                    int replicas) {
  long perMicro = globalBatch / std::max(1, microBatches);
  return int(std::max(1L, (perMicro + replicas - 1) / replicas));
}

const LayerTable &CostModel::table(int g, int tp, int mbs) const {
  auto key = std::make_tuple(g, tp, mbs);
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;

  const DeviceGroup &group = clusterDesc.groups[g];
  const DeviceSpec &spec = *group.spec;
  const size_t n = modelDesc.layers.size();
  std::vector<LayerTime> measured;
  bool profiled = profiles && profiles->lookup(spec.name, tp, mbs, measured) &&
                  measured.size() == n;

  const double flops = spec.flops(modelDesc.dtype);
  const double bw = spec.memoryBytesPerSecond();
  const double e = modelDesc.bytesPerElement;
  const Link &intra = clusterDesc.link(g, g);

  LayerTable t;
  t.profiled = profiled;
  t.compute.assign(n + 1, 0);
  t.fwd.assign(n + 1, 0);
  t.update.assign(n + 1, 0);
  t.params.assign(n + 1, 0);
  t.stash.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const LayerDesc &l = modelDesc.layers[i];
    const double split = l.tensorParallel ? tp : 1;
    double fwd, bwd, update;
    if (profiled) {
      fwd = measured[i].fwd;
      bwd = measured[i].bwd;
      update = measured[i].update;
    } else {
      // Roofline: the slower of compute and memory traffic, per op when the
      // ops are known, else for the layer as a whole.
      auto roofline = [&](double f, double acts, double weights) {
        return std::max(f * mbs / split / flops,
                        (weights + acts * mbs) / split / bw);
      };
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
        double weights = l.params * e;
        fwd = roofline(l.fwdFlops, l.ioBytes, weights);
        bwd = roofline(l.bwdFlops, 2 * l.ioBytes, 2 * weights);
      }
      update = l.params / split * training.optimizerBytesPerParam / bw;
      if (tp > 1 && l.tensorParallel && l.params > 0) {
        // Megatron: two all-reduces of the layer output forward, two backward.
        double ar = ringAllReduceTime(l.outputBytes * mbs, tp, intra);
        fwd += 2 * ar;
        bwd += 2 * ar;
      }
    }
    t.compute[i + 1] = t.compute[i] + fwd + bwd;
    t.fwd[i + 1] = t.fwd[i] + fwd;
    t.update[i + 1] = t.update[i] + update;
    t.params[i + 1] = t.params[i] + l.params / split;
    // Sequence parallelism splits the stashed activations over the TP group.
    t.stash[i + 1] = t.stash[i] + l.stashBytes / split;
  }
  return cache.emplace(key, std::move(t)).first->second;
}

double CostModel::boundaryTime(int layer, long samples, int a, int ra, int b,
                               int rb) const {
  if (layer <= 0 || layer >= int(modelDesc.layers.size()))
    return 0;
  double bytes = modelDesc.layers[layer - 1].outputBytes * samples;
  if (bytes <= 0)
    return 0;
  const Link *link = &clusterDesc.link(a, b);
  // Two stages of one group on different nodes talk over the network.
  if (a == b && clusterDesc.groups[a].nodes > 1 && clusterDesc.hasNetwork)
    link = &clusterDesc.network;
  int streams = std::max(1, std::min(ra, rb));
  return link->latencySeconds() + bytes / (streams * link->bytesPerSecond());
}

double CostModel::syncTime(int g, int tp, int replicas, double params,
                           AllReduceAlgorithm algorithm) const {
  const DeviceGroup &group = clusterDesc.groups[g];
  int perNode = std::max(1, group.devicesPerNode / tp);
  const Link &intra = clusterDesc.link(g, g);
  const Link &inter = clusterDesc.hasNetwork ? clusterDesc.network : intra;
  return allReduceTime(algorithm, params * training.gradientBytesPerParam,
                       replicas, perNode, intra, inter);
}

AllReduceAlgorithm CostModel::bestAlgorithm(int g, int tp, int replicas,
                                            double params) const {
  AllReduceAlgorithm best = AllReduceAlgorithm::Ring;
  double bestTime = syncTime(g, tp, replicas, params, best);
  for (auto a : {AllReduceAlgorithm::Tree, AllReduceAlgorithm::Hierarchical}) {
    double t = syncTime(g, tp, replicas, params, a);
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

double CostModel::memoryBytes(const LayerTable &t, int b, int e, int tp,
                              int mbs, int inFlight) const {
  (void)tp; // already folded into the table's prefix sums
  return t.range(t.params, b, e) * training.stateBytesPerParam +
         double(inFlight) * mbs * t.range(t.stash, b, e);
}

StageCost CostModel::stageCost(const LayerTable &t, const StageContext &ctx,
                               int b, int e, AllReduceAlgorithm *chosen) const {
  StageCost c;
  c.fwd = t.range(t.fwd, b, e);
  c.bwd = t.range(t.compute, b, e) - c.fwd;
  // Each stage pays for what it sends: activations forward, gradients back.
  if (ctx.nextGroup >= 0)
    c.p2p += boundaryTime(e, ctx.samples, ctx.group, ctx.replicas,
                          ctx.nextGroup, ctx.nextReplicas);
  if (ctx.prevGroup >= 0)
    c.p2p += boundaryTime(b, ctx.samples, ctx.group, ctx.replicas,
                          ctx.prevGroup, ctx.prevReplicas);
  double params = t.range(t.params, b, e);
  AllReduceAlgorithm algorithm =
      ctx.bestAlgorithm ? bestAlgorithm(ctx.group, ctx.tp, ctx.replicas, params)
                        : ctx.algorithm;
  if (chosen)
    *chosen = algorithm;
  c.sync = syncTime(ctx.group, ctx.tp, ctx.replicas, params, algorithm);
  c.update = t.range(t.update, b, e);
  c.memoryBytes = memoryBytes(t, b, e, ctx.tp, ctx.mbs, ctx.inFlight);
  c.capacityBytes = capacityBytes(ctx.group);
  return c;
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
  std::vector<int> used(clusterDesc.groups.size(), 0);
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    std::string at = "stage " + std::to_string(j) + ": ";
    if (s.layerBegin != (j == 0 ? 0 : plan.stages[j - 1].layerEnd) ||
        s.layerEnd <= s.layerBegin)
      return invalid(at + "layer ranges must be contiguous and non-empty");
    const DeviceGroup &g = clusterDesc.groups[s.group];
    if (s.tensorParallel < 1 || g.devicesPerNode % s.tensorParallel != 0)
      return invalid(at + "tensor_parallel must divide the devices per node (" +
                     std::to_string(g.devicesPerNode) + ")");
    if (s.replicas < 1)
      return invalid(at + "replicas must be >= 1");
    used[s.group] += s.replicas * s.tensorParallel;
  }
  if (plan.stages.back().layerEnd != L)
    return invalid("the stages must cover all " + std::to_string(L) +
                   " layers");
  for (size_t g = 0; g < used.size(); ++g)
    if (used[g] > clusterDesc.groups[g].count())
      return invalid("group '" + clusterDesc.groups[g].name + "' has " +
                     std::to_string(clusterDesc.groups[g].count()) +
                     " devices but the plan uses " + std::to_string(used[g]));

  const long samples = plan.globalBatch / plan.microBatches;
  double sum = 0, maxT = -1, maxSync = 0;
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    StageContext ctx;
    ctx.group = s.group;
    ctx.tp = s.tensorParallel;
    ctx.replicas = s.replicas;
    ctx.mbs =
        microBatchPerReplica(plan.globalBatch, plan.microBatches, s.replicas);
    if (j > 0) {
      ctx.prevGroup = plan.stages[j - 1].group;
      ctx.prevReplicas = plan.stages[j - 1].replicas;
    }
    if (j + 1 < S) {
      ctx.nextGroup = plan.stages[j + 1].group;
      ctx.nextReplicas = plan.stages[j + 1].replicas;
    }
    ctx.samples = samples;
    ctx.inFlight = std::min(S - j, plan.microBatches);
    ctx.bestAlgorithm = false;
    ctx.algorithm = s.allReduce;
    const LayerTable &t = table(s.group, s.tensorParallel, ctx.mbs);
    StageCost c = stageCost(t, ctx, s.layerBegin, s.layerEnd);
    if (c.memoryBytes > c.capacityBytes) {
      ev.fits = false;
      ev.worstShortfallBytes =
          std::max(ev.worstShortfallBytes, c.memoryBytes - c.capacityBytes);
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
  ev.syncTime = maxSync;
  ev.iterationTime = ev.pipelineTime + ev.syncTime;
  if (!ev.fits)
    ev.problem = "does not fit in device memory";
  return ev;
}

} // namespace het::plan
