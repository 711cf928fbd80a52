//===- CostModelTest.cpp - the cost formulas against hand-computed values -===//
#include "TestCatalog.h"

#include "het/Plan/Collectives.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/Error.h"
#include "het/Plan/Explain.h"
#include "het/Plan/GanttSvg.h"
#include "het/Plan/MeasuredPlans.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace het::plan;

namespace {

Link link(double gbps, double us) { return Link{"test", gbps, us}; }

TEST(Collectives, PointToPoint) {
  // 1 MB over 8 Gbit/s (1e9 B/s) with 10 us latency: 10 us + 1 ms.
  EXPECT_DOUBLE_EQ(p2pTime(1e6, link(8, 10)), 1e-5 + 1e-3);
  EXPECT_EQ(p2pTime(0, link(8, 10)), 0);
}

TEST(Collectives, Ring) {
  // 1 GB over 4 members at 100 Gbit/s (12.5 GB/s), 5 us:
  // 2*3*5us + 2*3/4 * 1e9 / 12.5e9 = 30 us + 120 ms.
  EXPECT_NEAR(ringAllReduceTime(1e9, 4, link(100, 5)), 3e-5 + 0.12, 1e-12);
  EXPECT_EQ(ringAllReduceTime(1e9, 1, link(100, 5)), 0);
}

TEST(Collectives, Tree) {
  // p = 4: depth 2, 2*2*(5 us + 80 ms).
  EXPECT_NEAR(treeAllReduceTime(1e9, 4, link(100, 5)), 4 * (5e-6 + 0.08),
              1e-12);
  // p = 5 rounds the depth up to 3.
  EXPECT_NEAR(treeAllReduceTime(1e9, 5, link(100, 5)), 6 * (5e-6 + 0.08),
              1e-12);
}

TEST(Collectives, Hierarchical) {
  // 8 members, 4 per node; 800 Gbit/s (1e11 B/s) 1 us inside, 100 Gbit/s
  // 5 us across. Inside: 3*1us + 3/4*1e9/1e11 = 7.503 ms, twice; across: 4
  // rings of 2 nodes over 1e9/4 bytes each, sharing the node's 100 Gbit/s:
  // 2*5us + 2*(1/2)*2.5e8/(1.25e10/4) = 80.01 ms.
  double t = hierarchicalAllReduceTime(1e9, 8, 4, link(800, 1), link(100, 5));
  EXPECT_NEAR(t, 2 * (3e-6 + 0.0075) + (1e-5 + 0.08), 1e-12);
  // On one node it is a ring on the node's link.
  EXPECT_DOUBLE_EQ(
      hierarchicalAllReduceTime(1e9, 4, 4, link(800, 1), link(100, 5)),
      ringAllReduceTime(1e9, 4, link(800, 1)));
  // Across nodes, ring and tree run at the slower network.
  EXPECT_DOUBLE_EQ(allReduceTime(AllReduceAlgorithm::Ring, 1e9, 8, 4,
                                 link(800, 1), link(100, 5)),
                   ringAllReduceTime(1e9, 8, link(100, 5)));
}

// One group of two CPUs-like devices with round numbers, a two-layer model.
struct Fixture : ::testing::Test {
  DeviceCatalog catalog;
  Cluster cluster;
  ModelDesc model;
  void SetUp() override {
    catalog.add(roundDevice(10));
    cluster = oneRoundNode(catalog, 2);
    model.name = "m";
    model.dtype = "fp32";
    model.bytesPerElement = 4;
    for (int i = 0; i < 2; ++i) {
      LayerDesc l;
      l.fwdFlops = 1e12; // per sample
      l.bwdFlops = 2e12;
      l.params = 1e6;
      l.ioBytes = 1e6;
      l.outputBytes = 1e6;
      l.stashBytes = 1e7;
      model.layers.push_back(l);
    }
  }
  /// Two stages of one device each, one layer each, 4 micro-batches of 2.
  static Plan twoStages() {
    Plan plan;
    plan.globalBatch = 8;
    plan.microBatches = 4;
    plan.stages = {{0, 1, 1, 0, 1, AllReduceAlgorithm::Ring},
                   {0, 1, 1, 1, 2, AllReduceAlgorithm::Ring}};
    return plan;
  }
};

TEST_F(Fixture, RooflineLayerTime) {
  CostModel cost(model, cluster, nullptr);
  const LayerTable &t = cost.table(0, 1, 2);
  // Forward, micro-batch 2: 2e12 / 5e13 = 40 ms (compute-bound: bytes are
  // (4e6 + 2e6) / 7e11 = 8.6 us). Backward twice that.
  EXPECT_NEAR(t.range(t.fwd, 0, 1), 0.04, 1e-12);
  EXPECT_NEAR(t.range(t.compute, 0, 1), 0.04 + 0.08, 1e-12);
  // Optimizer (fp32 Adam): 1e6 params * (16 B read + 12 B written) / 7e11 B/s.
  EXPECT_NEAR(t.range(t.update, 0, 1), 28e6 / 7e11, 1e-15);
}

TEST_F(Fixture, RooflineIsPerOpWhenOpsAreKnown) {
  // Layer 0 as two ops: a product (1e12 FLOPs, 1e3 B) and an elementwise op
  // (0 FLOPs, 7e8 B per sample). Per op, micro-batch 2: 2e12 / 5e13 = 40 ms
  // plus 1.4e9 / 7e11 = 2 ms; the layer as a whole would hide the 2 ms.
  model.layers[0].fwdOps = {{1e12, 1e3, 0}, {0, 7e8, 0}};
  CostModel cost(model, cluster, nullptr);
  const LayerTable &t = cost.table(0, 1, 2);
  EXPECT_NEAR(t.range(t.fwd, 0, 1), 0.04 + 0.002, 1e-9);
  // Backward: each op at twice the FLOPs and bytes.
  EXPECT_NEAR(t.range(t.compute, 0, 1) - t.range(t.fwd, 0, 1), 0.08 + 0.004,
              1e-9);
}

/// One member of `mbs` samples with `inFlight` of `microBatches` in flight.
CostModel::StageContext stageOf(int mbs, int inFlight, int microBatches, int zero = 0) {
  CostModel::StageContext c;
  c.members = {{0, 1, mbs}};
  c.samples = mbs;
  c.inFlight = inFlight;
  c.microBatches = microBatches;
  c.zero = zero;
  return c;
}

TEST_F(Fixture, MemoryIsStatePlusInFlightActivations) {
  CostModel cost(model, cluster, nullptr);
  const LayerTable &t = cost.table(0, 1, 2);
  // 2 layers * 1e6 params * 16 B + 3 micro-batches * 2 samples * 2e7 B,
  // and a backward's gradients (4 B) beside their sum over micro-batches.
  StageMemory m = cost.memory(t, 0, 2, stageOf(2, 3, 4), 0);
  EXPECT_DOUBLE_EQ(m.parameters + m.gradients + m.optimizerState, 2e6 * 16);
  EXPECT_DOUBLE_EQ(m.gradientResults, 2e6 * 4);
  EXPECT_DOUBLE_EQ(cost.memoryBytes(t, 0, 2, stageOf(2, 3, 4), 0), 2e6 * 20 + 3 * 2 * 2e7);
  // With one micro-batch the backward's gradients are the sum itself.
  EXPECT_DOUBLE_EQ(cost.memoryBytes(t, 0, 2, stageOf(2, 1, 1), 0), 2e6 * 16 + 2 * 2e7);
  EXPECT_DOUBLE_EQ(cost.capacityBytes(0), 10 * double(1ull << 30) * 0.9);
}

// What the runtime holds besides state and stash (--profile-memory's
// uses): every micro-batch's step inputs, a layer's activation gradients
// while its backward runs, and, once the activations are small, the
// update's new weights and moments beside the current ones.
TEST_F(Fixture, MemoryCountsDataGradientsAndTheUpdate) {
  model.layers[0].dataBytes = 1e5;
  model.layers[0].gradientBytes = 3e6;
  model.layers[1].gradientBytes = 5e6;
  model.layers[0].paramTensors = {6e5, 4e5};
  CostModel cost(model, cluster, nullptr);
  const LayerTable &t = cost.table(0, 1, 2);
  StageMemory m = cost.memory(t, 0, 2, stageOf(2, 1, 4), 0);
  EXPECT_DOUBLE_EQ(m.batchData, 4 * 2 * 1e5);
  EXPECT_DOUBLE_EQ(m.workingSet, 2 * 5e6);
  EXPECT_DOUBLE_EQ(cost.memory(t, 0, 1, stageOf(2, 1, 4), 0).workingSet, 2 * 3e6);
  // ZeRO-2 and 3 hold one whole gradient (or gathered weight) of the
  // largest tensor between its reduce-scatter (gather) and its use.
  StageMemory z3 = cost.memory(t, 0, 1, stageOf(2, 1, 4, 3), 0);
  EXPECT_DOUBLE_EQ(z3.workingSet, 2 * 3e6 + 4 * 6e5);
  EXPECT_DOUBLE_EQ(m.update(), 2 * (2e6 * 4 + 2e6 * 8) + 2e6 * 4);
  model.layers[0].stashBytes = model.layers[1].stashBytes = 1;
  model.layers[0].gradientBytes = model.layers[1].gradientBytes = 0;
  CostModel small(model, cluster, nullptr);
  const LayerTable &s = small.table(0, 1, 2);
  StageMemory u = small.memory(s, 0, 2, stageOf(2, 1, 1), 0);
  EXPECT_GT(u.update(), u.backward());
  EXPECT_DOUBLE_EQ(u.peak(), u.update());
}

// Attention probabilities ([.., Q, K], f32) are held by how a kind runs
// het.attention: oneDNN's kernel (a local cpu.onednn-like kind) holds none;
// generated CPU kernels and accelerators write it as its three ops and
// hold one layer's scores and probabilities while it runs (recomputed in
// the backward of a pipeline stage).
TEST_F(Fixture, AttentionProbabilitiesByHowAKindRunsAttention) {
  model.layers[0].attentionProbabilityBytes = 4e6;
  model.layers[1].attentionProbabilityBytes = 3e6;
  auto memoryOn = [&](const std::string &vendor, const std::string &arch) {
    DeviceCatalog kinds;
    DeviceSpec d = roundDevice(10);
    d.vendor = vendor;
    d.arch = arch;
    kinds.add(d);
    Cluster one = oneRoundNode(kinds, 2);
    CostModel cost(model, one, nullptr);
    // Micro-batches of 2 samples, 3 in flight.
    return cost.memoryBytes(cost.table(0, 1, 2), 0, 2, stageOf(2, 3, 3), 0);
  };
  double state = 2e6 * 20, stash = 3 * 2 * 2e7; // state with a backward's gradients
  EXPECT_DOUBLE_EQ(memoryOn("cpu", "onednn"), state + stash);
  // Scores and probabilities of the larger layer, for one micro-batch.
  EXPECT_DOUBLE_EQ(memoryOn("cpu", "mlir"), state + stash + 2 * 2 * 4e6);
  EXPECT_DOUBLE_EQ(memoryOn("nvidia", "sm_90"), state + stash + 2 * 2 * 4e6);
}

// A stage whose replicas span two kinds (4 on node "na", 4 on node "nb")
// sends to a stage of 8 replicas on two nodes of 4 ("nc"): each node's
// network card carries the streams of that node's replicas, 4, not the
// stage's 8 (issue 46: mixed-kind stages came out 1.1-1.4x too slow).
TEST(CostModelBoundary, MixedKindStageSharesEachNodesCardByItsOwnReplicas) {
  DeviceCatalog catalog;
  catalog.add(roundDevice(10));
  auto node = [](const char *name, int count, const char *group) {
    return nlohmann::json{
        {"name", name},
        {"count", count},
        {"devices", {{{"group", group}, {"kind", "round"}, {"count", 4}}}},
        {"links",
         {{{"between", {group, group}},
           {"type", "x"},
           {"bandwidth_gbps", 800.0},
           {"latency_us", 1.0}}}}};
  };
  nlohmann::json spec = {
      {"name", "c"},
      {"nodes", {node("na", 1, "a"), node("nb", 1, "b"), node("nc", 2, "c")}},
      {"network", {{"type", "ib"}, {"bandwidth_gbps", 80.0}, {"latency_us", 5.0}}}};
  Cluster cluster = parseCluster(spec, "c.json", catalog);
  ModelDesc model;
  model.name = "m";
  for (int i = 0; i < 2; ++i) {
    LayerDesc l;
    l.fwdFlops = 1e9;
    l.bwdFlops = 2e9;
    l.params = 1e3;
    l.outputBytes = 1e6;
    model.layers.push_back(l);
  }
  CostModel cost(model, cluster, nullptr);
  Plan plan;
  plan.globalBatch = 16;
  plan.microBatches = 1;
  StagePlan first(0, 1, 4, 0, 1), second(2, 1, 8, 1, 2);
  first.replicaGroups.push_back({1, 4, 0});
  plan.stages = {first, second};
  CostModel::StageContext ctx = cost.contextOf(plan, 0);
  ASSERT_EQ(ctx.replicas(), 8);
  // 16 samples * 1e6 B over 8 streams, each node's 80 Gbit/s (1e10 B/s)
  // shared by its 4 replicas: 5 us + 1.6e7 / (8 * 1e10 / 4).
  EXPECT_DOUBLE_EQ(cost.boundaryTime(1, ctx, /*next=*/true), 5e-6 + 1.6e7 / (8 * 1e10 / 4));
  // Told only the stage's total, the card would carry all 8.
  EXPECT_DOUBLE_EQ(cost.boundaryTime(1, 16, ctx.groups(), 8, ctx.nextGroups, 8),
                   5e-6 + 1.6e7 / (8 * 1e10 / 8));
}

// A measured stage call's cost (het-tune stages: the runtime's work around
// a stage function) is paid once per stage and micro-batch, however many
// layers the stage holds: between two profiled sizes it is interpolated.
TEST_F(Fixture, AStageCallIsPaidOncePerStage) {
  ProfileSet profiles;
  for (int mbs : {2, 4}) {
    ProfileTable t;
    t.layers = {{1e-3 * mbs, 2e-3 * mbs, 1e-4}, {1e-3 * mbs, 2e-3 * mbs, 1e-4}};
    t.call = {5e-4 * mbs, 1e-3 * mbs, 2e-4};
    profiles.add("round", 1, mbs, std::move(t), "test");
  }
  CostModel cost(model, cluster, &profiles);
  const LayerTable &t = cost.table(0, 1, 3);
  // Micro-batch 3: layers 3 + 6 ms each, the call 1.5 + 3 ms.
  EXPECT_NEAR(t.stageCompute(0, 2), 2 * 9e-3 + 4.5e-3, 1e-12);
  EXPECT_NEAR(t.stageFwd(0, 1), 3e-3 + 1.5e-3, 1e-12);
  EXPECT_NEAR(t.stageUpdate(0, 2), 2e-4 + 2e-4, 1e-12);
  // One stage of both layers pays one call per micro-batch, two stages two.
  Plan one, two;
  one.globalBatch = two.globalBatch = 3;
  one.microBatches = two.microBatches = 1;
  one.stages = {{0, 1, 1, 0, 2, AllReduceAlgorithm::Ring}};
  two.stages = {{0, 1, 1, 0, 1, AllReduceAlgorithm::Ring},
                {0, 1, 1, 1, 2, AllReduceAlgorithm::Ring}};
  Evaluation a = cost.evaluate(one), b = cost.evaluate(two);
  EXPECT_NEAR(a.stages[0].fwd + a.stages[0].bwd, 2 * 9e-3 + 4.5e-3, 1e-12);
  EXPECT_NEAR(b.stages[0].fwd + b.stages[0].bwd + b.stages[1].fwd + b.stages[1].bwd,
              2 * (9e-3 + 4.5e-3), 1e-12);
}

TEST_F(Fixture, OneFOneBIterationTime) {
  CostModel cost(model, cluster, nullptr);
  Plan plan = twoStages();
  Evaluation ev = cost.evaluate(plan);
  ASSERT_TRUE(ev.fits) << ev.problem;
  // Each stage: 120 ms of compute; the boundary send of 2 samples * 1e6 B
  // over 800 Gbit/s (1e11 B/s) + 1 us, paid once by each stage.
  double send = 1e-6 + 2e6 / 1e11;
  double t = 0.12 + send;
  EXPECT_NEAR(ev.stages[0].time(), t, 1e-12);
  // sum(t) + (m - 1) max(t) + slowest (sync + update); one replica: no sync.
  double update = 28e6 / 7e11;
  EXPECT_NEAR(ev.iterationTime, 2 * t + 3 * t + update, 1e-12);
  // Stage 0 holds 2 micro-batches in flight, stage 1 one; each a
  // backward's gradients (4 B per parameter) beside their sum.
  EXPECT_DOUBLE_EQ(ev.stages[0].memoryBytes(), 1e6 * 20 + 2 * 2 * 1e7);
  EXPECT_DOUBLE_EQ(ev.stages[1].memoryBytes(), 1e6 * 20 + 1 * 2 * 1e7);
}

TEST_F(Fixture, ExplainSplitsTheIterationIntoItsParts) {
  CostModel cost(model, cluster, nullptr);
  Plan plan = twoStages();
  Evaluation ev = cost.evaluate(plan);
  IterationBreakdown why = explainIteration(plan, ev);
  // As OneFOneBIterationTime: 4 x 120 ms of the bottleneck's work, 4 of its
  // sends, the other stage's one micro-batch (fill and drain), and the
  // update (one replica: no sync).
  double send = 1e-6 + 2e6 / 1e11, update = 28e6 / 7e11;
  ASSERT_EQ(why.parts.size(), 4u);
  EXPECT_EQ(why.parts[0].name, "compute");
  EXPECT_NEAR(why.parts[0].seconds, 4 * 0.12, 1e-12);
  EXPECT_EQ(why.parts[1].name, "sends");
  EXPECT_NEAR(why.parts[1].seconds, 4 * send, 1e-12);
  EXPECT_EQ(why.parts[2].name, "fill_drain");
  EXPECT_NEAR(why.parts[2].seconds, 0.12 + send, 1e-12);
  EXPECT_EQ(why.parts[3].name, "update");
  EXPECT_NEAR(why.parts[3].seconds, update, 1e-12);
  // Each stage works 4 x (120 ms + its send) and updates once; the rest of
  // the iteration it waits.
  ASSERT_EQ(why.stages.size(), 2u);
  EXPECT_NEAR(why.stages[1].busy(), 4 * (0.12 + send) + update, 1e-12);
  // het-compile --plan auto's one line: shares, and the stage idling most
  // (the stages are equal: each waits out the other's micro-batch in the
  // fill and drain; the first is named).
  EXPECT_EQ(summarizeBreakdown(why),
            "s0's forward and backward 80%, its sends <1%, fill and drain 20%, "
            "optimizer update <1%; s0 idles 20% of it");
  nlohmann::json j = breakdownToJson(why);
  EXPECT_EQ(j["parts"].size(), 4u);
  EXPECT_NEAR(j["stages"][0]["idle_fraction"].get<double>(),
              1 - (4 * (0.12 + send) + update) / ev.iterationTime, 1e-9);
}

TEST_F(Fixture, SimulatedIterationMatchesTheClosedForm) {
  // With equal stages and free sends, 1F1B's makespan is exactly
  // (S - 1 + m)(F + B) plus the sync and optimizer after the last backward.
  for (auto &l : model.layers)
    l.outputBytes = 0;
  CostModel cost(model, cluster, nullptr);
  Plan plan = twoStages();
  Evaluation ev = cost.evaluate(plan);
  Timeline t = simulateIteration(cost, plan, ev);
  EXPECT_NEAR(t.end, ev.iterationTime, 1e-12);
  EXPECT_NEAR(t.end, (2 - 1 + 4) * 0.12 + 28e6 / 7e11, 1e-12);
  // 4 forwards and 4 backwards per stage, and one sync bar each.
  EXPECT_EQ(t.boxes.size(), 2u * (4 + 4 + 1));
  std::string svg = renderGanttSvg(cost, plan, ev);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("utilization per device group"), std::string::npos);
}

TEST_F(Fixture, TensorParallelSplitsComputeAndAddsAllReduces) {
  CostModel cost(model, cluster, nullptr);
  const LayerTable &one = cost.table(0, 1, 2);
  const LayerTable &two = cost.table(0, 2, 2);
  // Half the FLOPs each, plus 4 ring all-reduces of 2e6 B over 2 devices.
  double ar = ringAllReduceTime(2e6, 2, cluster.link(0, 0));
  EXPECT_NEAR(two.range(two.compute, 0, 1),
              one.range(one.compute, 0, 1) / 2 + 4 * ar, 1e-12);
}

// Expert parallelism: each of two replicas holds half of layer 1's 4
// experts, so its experts' weights (8e5 of the layer's 1e6 parameters),
// gradients and Adam moments are half; their gradients leave the stage's
// all-reduce; each replica does the same expert work (half the experts
// over all tokens instead of all experts over half) and exchanges rows.
TEST_F(Fixture, ExpertParallelismDividesTheExpertsStateNotTheirWork) {
  model.layers[1].experts.count = 4;
  model.layers[1].experts.params = 8e5;
  model.layers[1].experts.fwdFlops = 8e11;
  model.layers[1].experts.bwdFlops = 1.6e12;
  model.layers[1].experts.exchangeBytes = 1e5;
  CostModel cost(model, cluster, nullptr);
  Plan plan;
  plan.globalBatch = 8;
  plan.microBatches = 1;
  plan.stages = {{0, 1, 2, 0, 2, AllReduceAlgorithm::Ring}};
  Evaluation whole = cost.evaluate(plan);
  plan.stages[0].replicaGroups[0].experts = 2;
  Evaluation split = cost.evaluate(plan);
  ASSERT_EQ(split.problem, "");
  EXPECT_DOUBLE_EQ(whole.stages[0].memory.parameters - split.stages[0].memory.parameters,
                   4e5 * 4);
  EXPECT_DOUBLE_EQ(whole.stages[0].memory.optimizerState -
                       split.stages[0].memory.optimizerState,
                   4e5 * 8);
  EXPECT_LT(split.stages[0].sync, whole.stages[0].sync);
  // The same compute, plus two exchanges each way.
  CostModel::StageContext ctx = cost.contextOf(plan, 0);
  double exchange = cost.expertExchangeTime(ctx, 0, 2, 0);
  EXPECT_GT(exchange, 0);
  EXPECT_NEAR(split.stages[0].fwd, whole.stages[0].fwd + 2 * exchange, 1e-12);
  // Counts that are not the layer's experts are refused.
  plan.stages[0].replicaGroups[0].experts = 3;
  EXPECT_EQ(cost.evaluate(plan).problem,
            "stage 0: experts: the replicas hold 6 experts in all, but layer 1 has 4");
}

// The mixture-of-experts ops have no GPU kernels: no plan puts such a
// layer on a GPU kind (het-compile would refuse it).
TEST_F(Fixture, MixturesOfExpertsStayOnCpuKinds) {
  model.layers[1].experts.count = 4;
  DeviceSpec gpu = roundDevice(10);
  gpu.name = "round-gpu";
  gpu.vendor = "nvidia";
  gpu.arch = "sm_90";
  catalog.add(gpu);
  nlohmann::json spec = {
      {"name", "c"},
      {"nodes",
       {{{"name", "n"},
         {"count", 1},
         {"devices", {{{"group", "gpu"}, {"kind", "round-gpu"}, {"count", 1}}}},
         {"links",
          {{{"between", {"gpu", "gpu"}},
            {"type", "x"},
            {"bandwidth_gbps", 800.0},
            {"latency_us", 1.0}}}}}}}};
  Cluster gpus = parseCluster(spec, "c.json", catalog);
  CostModel cost(model, gpus, nullptr);
  Plan plan;
  plan.globalBatch = 8;
  plan.microBatches = 1;
  plan.stages = {{0, 1, 1, 0, 2, AllReduceAlgorithm::Ring}};
  EXPECT_EQ(cost.evaluate(plan).problem,
            "stage 0: layer 1 is a mixture of experts, which has no GPU kernels yet; group "
            "'gpu' (round-gpu) cannot run it");
  plan.stages = {{0, 1, 1, 0, 1, AllReduceAlgorithm::Ring}};
  model.layers.resize(1);
  EXPECT_EQ(CostModel(model, gpus, nullptr).evaluate(plan).problem, "");
}

TEST_F(Fixture, InvalidPlansSayWhy) {
  CostModel cost(model, cluster, nullptr);
  Plan plan;
  plan.globalBatch = 8;
  plan.microBatches = 3;
  plan.stages = {{0, 1, 1, 0, 2, AllReduceAlgorithm::Ring}};
  EXPECT_EQ(cost.evaluate(plan).problem,
            "micro_batches must divide the global batch");
  plan.microBatches = 2;
  plan.stages[0].replicaGroups[0].replicas = 3;
  EXPECT_NE(cost.evaluate(plan).problem.find(
                "group 'g' has 2 devices but the plan uses 3"),
            std::string::npos);
}

TEST_F(Fixture, GradientsTravelInFp32InEveryPrecision) {
  // het reduces gradients in fp32 whatever the format the kinds compute
  // in: 2 (1/2) n 4 B / 1e11 B/s over the node's 800 Gbit/s link, plus 2
  // latencies, in fp32 and in mixed precision alike.
  catalog.add([] {
    DeviceSpec d = roundDevice(10);
    d.name = "round16";
    d.peakTflops["bf16"] = 200;
    return d;
  }());
  Cluster sixteen = cluster;
  sixteen.groups[0].spec = catalog.find("round16");
  CostModel fp32(model, sixteen, nullptr);
  CostModel mixed(model, sixteen, nullptr, TrainingSetup::of(model, Precision::Mixed));
  EXPECT_EQ(fp32.format(0), "fp32");
  EXPECT_EQ(mixed.format(0), "bf16");
  EXPECT_NEAR(fp32.syncTime(0, 1, 2, 1e6, AllReduceAlgorithm::Ring), 2e-6 + 4e6 / 1e11, 1e-15);
  EXPECT_NEAR(mixed.syncTime(0, 1, 2, 1e6, AllReduceAlgorithm::Ring), 2e-6 + 4e6 / 1e11, 1e-15);
  Precision p;
  EXPECT_TRUE(parsePrecision("mixed", p));
  EXPECT_EQ(p, Precision::Mixed);
  EXPECT_TRUE(parsePrecision("fp16", p));
  EXPECT_EQ(p, Precision::FP16);
  EXPECT_FALSE(parsePrecision("int8", p));
}

TEST_F(Fixture, AFormatPricesTimeAndMemory) {
  // bf16 at 200 TF (1e14 FLOP/s at 0.5): the compute-bound layers take
  // half as long; activations take half the bytes; each parameter holds
  // fp32 master weight, gradient and moments (16 B) plus its bf16 copy.
  DeviceSpec d = roundDevice(10);
  d.name = "round16";
  d.peakTflops["bf16"] = 200;
  catalog.add(d);
  cluster.groups[0].spec = catalog.find("round16");
  CostModel fp32(model, cluster, nullptr);
  CostModel bf16(model, cluster, nullptr, TrainingSetup::of(model, Precision::BF16));
  const LayerTable &a = fp32.table(0, 1, 2), &b = bf16.table(0, 1, 2);
  EXPECT_NEAR(a.range(a.compute, 0, 1), 2 * 3e12 / 5e13, 1e-12);
  EXPECT_NEAR(b.range(b.compute, 0, 1), 2 * 3e12 / 1e14, 1e-12);
  EXPECT_DOUBLE_EQ(b.range(b.stash, 0, 2), a.range(a.stash, 0, 2) / 2);
  EXPECT_DOUBLE_EQ(a.stateBytesPerParam, 16);
  EXPECT_DOUBLE_EQ(b.stateBytesPerParam, 18);
  StageMemory m = bf16.memory(b, 0, 2, stageOf(2, 1, 1), 0);
  EXPECT_DOUBLE_EQ(m.backward(), 2e6 * 18 + 2 * 2e7 / 2);
  // The update's peak: new fp32 weights, bf16 copies and moments beside
  // the current ones, and the gradients.
  EXPECT_DOUBLE_EQ(m.peak(), 2 * 2e6 * 14 + 2e6 * 4);
  // Messages between two bf16 stages move bf16 (both directions): 2
  // samples * 1e6 B of f32 activations at half the bytes, over 1e11 B/s
  // with 1 us latency.
  EXPECT_DOUBLE_EQ(fp32.boundaryTime(1, 2, {0}, 1, {0}, 1), 1e-6 + 2e6 / 1e11);
  EXPECT_DOUBLE_EQ(bf16.boundaryTime(1, 2, {0}, 1, {0}, 1), 1e-6 + 1e6 / 1e11);
}

/// One node of 4 V100 and 4 A100-80 of the shipped catalog.
Cluster voltaAndAmpere() {
  nlohmann::json spec = {
      {"name", "v100-a100"},
      {"nodes",
       {{{"name", "n"},
         {"count", 1},
         {"devices",
          {{{"group", "v100"}, {"kind", "V100"}, {"count", 4}},
           {{"group", "a100"}, {"kind", "A100-80"}, {"count", 4}}}},
         {"links",
          {{{"between", {"v100", "a100"}},
            {"type", "pcie"},
            {"bandwidth_gbps", 256.0},
            {"latency_us", 5.0}}}}}}}};
  return parseCluster(spec, "v100-a100.json", testCatalog());
}

TEST_F(Fixture, EachKindTrainsInTheBestFormatItHas) {
  Cluster both = voltaAndAmpere();
  // Mixed: bf16 where the kind has it, fp16 (with loss scaling) where not.
  CostModel mixed(model, both, nullptr, TrainingSetup::of(model, Precision::Mixed));
  EXPECT_EQ(mixed.formats(), (std::vector<std::string>{"fp16", "bf16"}));
  // Auto: an fp32 model trains in fp32, a 16-bit one mixed.
  EXPECT_EQ(CostModel(model, both, nullptr).formats(),
            (std::vector<std::string>{"fp32", "fp32"}));
  ModelDesc half = model;
  half.dtype = "bf16";
  half.bytesPerElement = 2;
  EXPECT_EQ(CostModel(half, both, nullptr).formats(),
            (std::vector<std::string>{"fp16", "bf16"}));
  half.dtype = "fp16";
  EXPECT_EQ(CostModel(half, both, nullptr).formats(),
            (std::vector<std::string>{"fp16", "bf16"}));
  // Forcing a format a kind lacks names the group and the kind.
  try {
    CostModel bf16(model, both, nullptr, TrainingSetup::of(model, Precision::BF16));
    FAIL() << "bf16 on a V100 was accepted";
  } catch (const PlanError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("group 'v100'"), std::string::npos) << what;
    EXPECT_NE(what.find("kind V100 has no bf16"), std::string::npos) << what;
    EXPECT_NE(what.find("fp32, fp16"), std::string::npos) << what;
  }
  EXPECT_EQ(CostModel(model, both, nullptr, TrainingSetup::of(model, Precision::FP16)).formats(),
            (std::vector<std::string>{"fp16", "fp16"}));
}

TEST_F(Fixture, PlansStateEachGroupsFormat) {
  Cluster both = voltaAndAmpere();
  CostModel mixed(model, both, nullptr, TrainingSetup::of(model, Precision::Mixed));
  Plan plan;
  plan.globalBatch = 8;
  plan.microBatches = 2;
  plan.stages = {{0, 1, 2, 0, 1, AllReduceAlgorithm::Ring},
                 {1, 1, 2, 1, 2, AllReduceAlgorithm::Ring}};
  plan.formats = mixed.formats();
  nlohmann::json j = planToJson(plan, both, model);
  EXPECT_EQ(j["stages"][0]["precision"], "fp16");
  EXPECT_EQ(j["stages"][1]["precision"], "bf16");
  EXPECT_EQ(j["groups"][0]["formats"], (nlohmann::json{"fp32", "fp16"}));
  Plan back = planFromJson(j, "p.json", both, model);
  EXPECT_EQ(back.formats, plan.formats);
  // Evaluated as stated: a cost model of another precision takes them.
  CostModel fp32(model, both, nullptr);
  EXPECT_FALSE(fp32.evaluate(back).problem.empty());
  fp32.trainIn(back.formats, "p.json");
  EXPECT_DOUBLE_EQ(fp32.evaluate(back).iterationTime, mixed.evaluate(plan).iterationTime);
  // bf16 on the V100 stage: refused, naming the stage, its field and kind.
  j["stages"][0]["precision"] = "bf16";
  try {
    planFromJson(j, "p.json", both, model);
    FAIL() << "a V100 stage in bf16 was accepted";
  } catch (const PlanError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("p.json: stages[0].precision: stage s0 trains group 'v100' (kind "
                        "V100) in bf16, which the kind lacks"),
              std::string::npos)
        << what;
  }
}

TEST_F(Fixture, EveryKernelPaysTheDevicesFixedCost) {
  // A layer of 1000 FLOPs is nothing to the roofline; 3 forward and 6
  // backward kernels of 10 us each are what it costs.
  DeviceSpec slow = *catalog.find("round");
  slow.name = "launchy";
  slow.kernelOverheadSeconds = 10e-6;
  catalog.add(slow);
  cluster.groups[0].spec = catalog.find("launchy");
  model.layers[0] = LayerDesc();
  model.layers[0].fwdFlops = 1000;
  model.layers[0].fwdKernels = 3;
  model.layers[0].bwdKernels = 6;
  CostModel cost(model, cluster, nullptr);
  const LayerTable &t = cost.table(0, 1, 1);
  EXPECT_NEAR(t.range(t.fwd, 0, 1), 30e-6, 1e-9);
  EXPECT_NEAR(t.range(t.compute, 0, 1), 90e-6, 1e-9);
}

TEST_F(Fixture, ADtypeWithoutAPeakNamesTheEntry) {
  DeviceSpec halfOnly = *catalog.find("round");
  halfOnly.name = "halfonly";
  halfOnly.file = "v.json";
  halfOnly.peakTflops = {{"fp16", 100}};
  catalog.add(halfOnly);
  cluster.groups[0].spec = catalog.find("halfonly");
  CostModel cost(model, cluster, nullptr);
  try {
    cost.table(0, 1, 1);
    FAIL() << "priced an fp32 model on a device with no fp32 figure";
  } catch (const PlanError &e) {
    EXPECT_EQ(std::string(e.what()),
              "v.json: devices[halfonly].peak_tflops: no figure for fp32 to price it by (add "
              "one, or give --profiles for halfonly)");
  }
}

// Two nodes of 4 devices each on one 100 Gbit/s NIC per node.
static Cluster twoNodes(const DeviceCatalog &catalog, nlohmann::json extraNode = {},
                        nlohmann::json network = {}) {
  nlohmann::json node = {{"name", "n"},
                         {"count", 2},
                         {"devices", {{{"group", "g"}, {"kind", "round"}, {"count", 4}}}}};
  for (auto &[k, v] : extraNode.items())
    node[k] = v;
  nlohmann::json net = {{"type", "eth"}, {"bandwidth_gbps", 100.0}, {"latency_us", 5.0}};
  for (auto &[k, v] : network.items())
    net[k] = v;
  return parseCluster({{"name", "two"}, {"nodes", {node}}, {"network", net}}, "two.json",
                      catalog);
}

TEST_F(Fixture, TensorParallelRanksShareTheNodesNic) {
  cluster = twoNodes(catalog);
  CostModel cost(model, cluster, nullptr);
  // 8 devices: tp 2 gives 4 replicas, 2 per node; each of the 2 TP ranks
  // runs its own ring over the 4 replicas, both through the node's NIC, so
  // each ring sees 50 Gbit/s.
  double perDevice = 1e6;
  Link half = cluster.crossNode[0][0];
  EXPECT_DOUBLE_EQ(half.bandwidthGbps, 100);
  half.bandwidthGbps = 50;
  EXPECT_NEAR(cost.syncTime(0, 2, 4, perDevice, AllReduceAlgorithm::Ring),
              ringAllReduceTime(perDevice * 4, 4, half), 1e-15);
  // Without TP, one ring per node crosses the NIC.
  EXPECT_NEAR(cost.syncTime(0, 1, 8, perDevice, AllReduceAlgorithm::Ring),
              ringAllReduceTime(perDevice * 4, 8, cluster.crossNode[0][0]), 1e-15);
}

TEST_F(Fixture, StreamsBetweenNodesShareTheirNics) {
  cluster = twoNodes(catalog);
  CostModel cost(model, cluster, nullptr);
  // Two stages of 4 replicas on one group that spans both nodes: 4 streams,
  // 2 leave each node, so each gets half the 100 Gbit/s (6.25e9 B/s).
  double bytes = 1e6 * 8; // layer 0's output, 8 samples
  EXPECT_NEAR(cost.boundaryTime(1, 8, 0, 4, 0, 4), 5e-6 + bytes / (4 * 6.25e9), 1e-15);
}

TEST_F(Fixture, ZonesAndNicsSetTheRouteBetweenNodes) {
  // A node's own NIC caps the fabric.
  EXPECT_DOUBLE_EQ(twoNodes(catalog, {{"nic_gbps", 25.0}}).crossNode[0][0].bandwidthGbps, 25);
  // Two templates in two zones: the zone pair's figure, else the network
  // over its oversubscription.
  nlohmann::json spec = {
      {"name", "zones"},
      {"nodes",
       {{{"name", "a"}, {"count", 1}, {"zone", "east"}, {"devices", {{{"group", "ga"}, {"kind", "round"}, {"count", 1}}}}},
        {{"name", "b"}, {"count", 1}, {"zone", "west"}, {"devices", {{{"group", "gb"}, {"kind", "round"}, {"count", 1}}}}},
        {{"name", "c"}, {"count", 1}, {"zone", "north"}, {"devices", {{{"group", "gc"}, {"kind", "round"}, {"count", 1}}}}}}},
      {"network",
       {{"type", "eth"},
        {"bandwidth_gbps", 100.0},
        {"latency_us", 5.0},
        {"oversubscription", 4.0},
        {"zones",
         {{{"between", {"east", "west"}},
           {"type", "wan"},
           {"bandwidth_gbps", 4.0},
           {"latency_us", 2000.0}}}}}}};
  Cluster c = parseCluster(spec, "zones.json", catalog);
  EXPECT_EQ(c.link(0, 1).type, "wan");
  EXPECT_DOUBLE_EQ(c.link(1, 0).bandwidthGbps, 4);
  EXPECT_DOUBLE_EQ(c.link(0, 1).latencyUs, 2000);
  EXPECT_DOUBLE_EQ(c.link(0, 2).bandwidthGbps, 25); // 100 / 4
  EXPECT_TRUE(c.overNetwork[0][2]);
  CostModel cost(model, c, nullptr);
  // The 25x slower pair shows in the price of a boundary.
  EXPECT_GT(cost.boundaryTime(1, 1, 0, 1, 1, 1), 6 * cost.boundaryTime(1, 1, 0, 1, 2, 1));
}

// What a tensor-parallel rank holds of a figure: the part the split at
// degree 2 left whole stays whole, the rest divides by the degree.
TEST_F(Fixture, ATiedParameterCostsEachHolderACopyAndAnExchange) {
  // Layer 0's parameters (1e6, counted there) are read by layer 1 too.
  CostModel untied(model, cluster, nullptr);
  Evaluation before = untied.evaluate(twoStages());
  model.ties.push_back({{0, 1}, 1e6});
  EXPECT_FALSE(model.keepsTiedLayers(0, 1));
  EXPECT_TRUE(model.keepsTiedLayers(0, 2));
  EXPECT_EQ(model.tiedCopyElements(0, 1), 0);   // the first layer's own
  EXPECT_EQ(model.tiedCopyElements(1, 2), 1e6); // the second stage's copy
  EXPECT_EQ(model.tiedExchangeElements(1, 2), 1e6);
  EXPECT_EQ(model.tiedExchangeElements(0, 2), 0); // all in one stage
  CostModel tied(model, cluster, nullptr);
  Evaluation after = tied.evaluate(twoStages());
  ASSERT_TRUE(after.problem.empty()) << after.problem;
  // The second stage holds the copy with its gradient and Adam state
  // (fp32: 4 + 4 + 8 bytes per element) and updates it as layer 0 does.
  EXPECT_NEAR(after.stages[1].memory.parameters - before.stages[1].memory.parameters, 4e6, 1);
  EXPECT_NEAR(after.stages[1].memory.gradients - before.stages[1].memory.gradients, 4e6, 1);
  EXPECT_NEAR(after.stages[1].memory.optimizerState - before.stages[1].memory.optimizerState,
              8e6, 1);
  const LayerTable &t = tied.table(0, 1, 2);
  EXPECT_NEAR(after.stages[1].update - before.stages[1].update, t.range(t.update, 0, 1), 1e-15);
  EXPECT_EQ(after.stages[0].update, before.stages[0].update);
  // Both holders pay one all-reduce of its gradient per step (one replica
  // each: over two ranks on the group's link).
  EXPECT_GT(after.stages[0].sync, before.stages[0].sync);
  EXPECT_NEAR(after.stages[0].sync - before.stages[0].sync,
              after.stages[1].sync - before.stages[1].sync, 1e-15);
  EXPECT_GT(after.iterationTime, before.iterationTime);
}

TEST(TensorParallelMemory, ShareKeepsTheUnsplitPartWhole) {
  EXPECT_DOUBLE_EQ(CostModel::tensorParallelShare(100, 50, 2), 0.5);  // all of it splits
  EXPECT_DOUBLE_EQ(CostModel::tensorParallelShare(100, 50, 4), 0.25);
  EXPECT_DOUBLE_EQ(CostModel::tensorParallelShare(100, 100, 4), 1.0); // none splits
  EXPECT_DOUBLE_EQ(CostModel::tensorParallelShare(100, 65, 4), 0.3 + 0.7 / 4);
  EXPECT_DOUBLE_EQ(CostModel::tensorParallelShare(100, 65, 1), 1.0);
  EXPECT_DOUBLE_EQ(CostModel::tensorParallelShare(0, 0, 2), 0.5);
}

// Plans that ran rank by what they measured; the others by their
// prediction scaled by how far the measured ones' predictions were off.
TEST(MeasuredPlans, MeasuredTimesRankAndScaleTheRest) {
  std::vector<RankedCandidate> c(3);
  c[0].predictedSeconds = 1.0; // predicted fastest, measured 3x slower
  c[0].measuredSeconds = 3.0;
  c[1].predictedSeconds = 1.2; // never ran: 1.2 x the median ratio
  c[2].predictedSeconds = 1.5;
  c[2].measuredSeconds = 2.0;
  double ratio = rankByMeasurement(c);
  EXPECT_DOUBLE_EQ(ratio, (3.0 + 2.0 / 1.5) / 2);
  EXPECT_DOUBLE_EQ(c[0].expectedSeconds, 3.0);
  EXPECT_DOUBLE_EQ(c[1].expectedSeconds, 1.2 * ratio);
  EXPECT_DOUBLE_EQ(c[2].expectedSeconds, 2.0);
  // None ran: the predictions as they are.
  std::vector<RankedCandidate> none(1);
  none[0].predictedSeconds = 0.5;
  EXPECT_DOUBLE_EQ(rankByMeasurement(none), 1.0);
  EXPECT_DOUBLE_EQ(none[0].expectedSeconds, 0.5);
}

// A key digests what decides the run, not what describes it.
TEST(MeasuredPlans, KeysIgnoreDescriptionsAndPredictions) {
  nlohmann::json plan = {{"cluster", "local"}, {"global_batch", 64}, {"micro_batches", 4},
                         {"stages", {{{"name", "s0"}, {"replicas", 2}}}},
                         {"model", "mlp"}, {"predicted_iteration_s", 1e-4}};
  nlohmann::json described = plan;
  described["model"] = "mlp_train_step";
  described["predicted_iteration_s"] = 2e-4;
  EXPECT_EQ(measuredPlanKey("m", plan), measuredPlanKey("m", described));
  nlohmann::json other = plan;
  other["micro_batches"] = 2;
  EXPECT_NE(measuredPlanKey("m", plan), measuredPlanKey("m", other));
  EXPECT_NE(measuredPlanKey("m", plan), measuredPlanKey("n", plan));
  EXPECT_EQ(measuredPlanWorkload(measuredPlanKey("m", plan)).rfind(measuredPlanPrefix("m"), 0), 0u);
}

TEST(GptModel, ParameterCountOfGpt3) {
  ModelDesc m = makeGptModel("gpt3", 96, 12288, 96, 2048, 50257);
  EXPECT_EQ(m.layers.size(), 98u);
  // 175 B parameters (Brown et al. 2020), within 1 %.
  EXPECT_NEAR(m.totalParams() / 1e9, 175.0, 1.75);
}

} // namespace

// The sparse table answers every range as a scan of it would.
TEST(RangeMaxTest, EveryRangeAsAScan) {
  std::vector<double> values = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  het::plan::RangeMax max(values);
  for (int b = -1; b <= int(values.size()) + 1; ++b)
    for (int e = b; e <= int(values.size()) + 1; ++e) {
      double scan = 0;
      for (int i = std::max(b, 0); i < std::min<int>(e, int(values.size())); ++i)
        scan = std::max(scan, values[size_t(i)]);
      EXPECT_DOUBLE_EQ(max.of(b, e), scan) << "[" << b << ", " << e << ")";
    }
  EXPECT_DOUBLE_EQ(het::plan::RangeMax().of(0, 3), 0);
}
