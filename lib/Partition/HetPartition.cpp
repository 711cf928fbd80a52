//===- HetPartition.cpp - cut a step into het.stage regions ---------------===//
#include "het/Partition/PartitionPlan.h"
#include "SyncBatchNorm.h"
#include "TiedParameters.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Partition/Passes.h"
#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/ModelFromIR.h"
#include "het/Plan/Planner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <set>

namespace mlir::het {
#define GEN_PASS_DEF_HETPARTITION
#include "het/Partition/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;
using ::het::partition::PartitionPlan;
using ::het::partition::TiedParameters;
using ::het::partition::tieParameters;

namespace {

long layerOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
    return a.getInt();
  return -1;
}

/// A gradient of expert weights spread over a stage's replicas (products
/// whose routing is het.moe_to_experts's counts), a sum of such, or one
/// expert's part of one.
bool isExpertHeldGradient(Value gradient) {
  Operation *def = gradient.getDefiningOp();
  if (auto grad = dyn_cast_or_null<MoEExpertWeightGradOp>(def))
    return cast<RankedTensorType>(grad.getIndices().getType()).getRank() == 1;
  if (isa_and_nonnull<AddOp>(def))
    return llvm::all_of(def->getOperands(), isExpertHeldGradient);
  // One expert's own parameter: its slice of the joined weight's gradient.
  if (isa_and_nonnull<ReshapeOp, SliceOp>(def))
    return isExpertHeldGradient(def->getOperand(0));
  return false;
}

// Symbol-safe: cluster names like "mixed-node" become mixed_node.
std::string symbolName(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))
             ? "c" + out
             : out;
}

struct HetPartitionPass
    : public mlir::het::impl::HetPartitionBase<HetPartitionPass> {
  using HetPartitionBase::HetPartitionBase;

  void runOnOperation() override;

private:
  func::FuncOp findFunction(ModuleOp module);
  FailureOr<PartitionPlan> loadPlan(ModuleOp module);
};

func::FuncOp HetPartitionPass::findFunction(ModuleOp module) {
  return ::het::plan::findLayeredFunction(module, functionName);
}

FailureOr<PartitionPlan> HetPartitionPass::loadPlan(ModuleOp module) {
  try {
    if (planFile != "auto")
      return ::het::partition::readPartitionPlan(planFile);
    if (clusterFile.empty()) {
      module.emitError("het-partition: plan=auto needs cluster=<spec.json>");
      return failure();
    }
    auto catalog = ::het::plan::DeviceCatalog::loadDirectory(
        ::het::plan::DeviceCatalog::defaultDirectory());
    ::het::plan::Cluster cluster =
        ::het::plan::loadCluster(clusterFile, catalog);
    ::het::plan::ModelDesc model =
        ::het::plan::modelFromModule(module, "(input IR)", functionName);
    ::het::plan::CostModel cost(model, cluster, nullptr);
    ::het::plan::PlannerOptions options;
    options.globalBatch =
        globalBatch > 0 ? globalBatch : (model.batch > 0 ? model.batch : 1);
    options.topK = 1;
    ::het::plan::PlanResult result = ::het::plan::planPipeline(cost, options);
    if (result.plans.empty()) {
      module.emitError() << "het-partition: no plan fits in device memory; the "
                            "smallest shortfall is "
                         << result.smallestShortfallBytes / double(1ull << 30)
                         << " GiB on " << result.shortfallWhere;
      return failure();
    }
    return ::het::partition::fromPlan(result.plans.front().plan, cluster);
  } catch (const ::het::plan::PlanError &e) {
    module.emitError() << "het-partition: " << e.what();
    return failure();
  } catch (const std::exception &e) {
    module.emitError() << "het-partition: malformed plan or cluster input: "
                       << e.what();
    return failure();
  }
}

void HetPartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  func::FuncOp func = findFunction(module);
  if (!func) {
    module.emitError("het-partition: no function with het.layer ops")
        << (functionName.empty() ? "" : " named '" + functionName + "'");
    return signalPassFailure();
  }
  FailureOr<PartitionPlan> loaded = loadPlan(module);
  if (failed(loaded))
    return signalPassFailure();
  PartitionPlan &plan = *loaded;

  Block &body = func.getBody().front();
  // The micro-batch the stages share: given, or the plan's, or (a plan
  // without a batch) each replica of the first stage taking the step's batch.
  int64_t microBatch = microBatchSamples;
  if (microBatch <= 0 && plan.globalBatch > 0 && plan.microBatches > 0) {
    if (plan.globalBatch % plan.microBatches != 0) {
      module.emitError() << "het-partition: " << plan.file << ": global_batch "
                         << plan.globalBatch << " does not divide into micro_batches "
                         << plan.microBatches;
      return signalPassFailure();
    }
    microBatch = plan.globalBatch / plan.microBatches;
  }
  if (microBatch <= 0)
    microBatch = ::het::plan::modelFromModule(module, "(input IR)", func.getName().str()).batch *
                 plan.stages.front().replicas();
  try {
    ::het::partition::resolveShares(plan, microBatch);
  } catch (const ::het::plan::PlanError &e) {
    module.emitError() << "het-partition: " << e.what();
    return signalPassFailure();
  }
  for (const auto &st : plan.stages)
    if (!lossWeighted && !st.evenShares()) {
      module.emitError() << "het-partition: stage '" << st.name
                         << "' splits its micro-batch unevenly over its replicas; averaging "
                            "their gradients would be wrong: the step's loss must be weighted "
                            "by each replica's share (het-compile builds it so) and "
                            "partitioned with loss-weighted=true";
      return signalPassFailure();
    }
  long layers = 0;
  for (Operation &op : body)
    layers = std::max(layers, layerOf(&op) + 1);
  // The stages must tile [0, layers) in order.
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    long expected = j == 0 ? 0 : plan.stages[j - 1].layerEnd;
    if (plan.stages[j].layerBegin != expected) {
      func.emitError() << "het-partition: plan stage " << j << " ('"
                       << plan.stages[j].name << "') starts at layer "
                       << plan.stages[j].layerBegin << ", expected "
                       << expected;
      return signalPassFailure();
    }
  }
  if (plan.stages.back().layerEnd != layers) {
    func.emitError() << "het-partition: the plan covers layers [0, "
                     << plan.stages.back().layerEnd << ") but the function has "
                     << layers << " layers";
    return signalPassFailure();
  }
  auto stageOfLayer = [&](long layer) -> int {
    for (size_t j = 0; j < plan.stages.size(); ++j)
      if (layer >= plan.stages[j].layerBegin && layer < plan.stages[j].layerEnd)
        return int(j);
    return -1;
  };

  // Where each layered op runs.
  std::map<Operation *, int> stageOf;
  for (Operation &op : body) {
    long l = layerOf(&op);
    if (l >= 0)
      stageOf[&op] = stageOfLayer(l);
  }
  // Tied parameters: a parameter read by layers of several stages (GPT-2's
  // token embedding and output head). Each of those stages keeps a copy of
  // it and of its optimizer state, sums its own layers' parts of the
  // gradient (accumulated over the micro-batches like any gradient), and
  // in the update the parts are summed over every rank of those stages by
  // one all-reduce (a het.tied_group), once per step; each copy then takes
  // the same update. The step's sum of the parts becomes one partial sum
  // per stage, and the update is repeated in every stage but its own.
  std::set<std::string> splitParameters(tensorParallelSplit.begin(), tensorParallelSplit.end());
  FailureOr<TiedParameters> tied =
      tieParameters(func, plan, stageOf, lossWeighted, splitParameters);
  if (failed(tied))
    return signalPassFailure();

  // The backward pass: gradient ops and everything computed from them
  // (optimizer updates aside). Marked so the pipeline lowering can run a
  // micro-batch's forward and backward apart.
  llvm::DenseSet<Operation *> backward;
  for (Operation &op : body) {
    if (isa<SGDOp, AdamOp>(op) || tied->updateCopies.contains(&op))
      continue;
    bool fromGradient = llvm::any_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && backward.contains(def);
    });
    // het-recompute's clones run in the backward, where their values are
    // read (in the forward they would live as long as the kept ones).
    if (fromGradient || op.getName().getStringRef().ends_with("_grad") ||
        op.hasAttr(HetDialect::getRecomputedAttrName()))
      backward.insert(&op);
  }
  // The stages that use an op's results: its own if it is layered, else
  // (it is copied into its users' stages) those of its users.
  std::function<void(Operation *, std::set<int> &)> stagesUsing;
  // The stages that use one operand of an op: a gradient's unscaling
  // (loss scaling) is split by stage, so gradient k goes only where its
  // unscaled copy is used, and the scale wherever any is.
  // Gradient clipping is split alike: gradient k of the squared norm and
  // of the clipping goes where its clipped copy is used.
  auto clippingOf = [](SquaredNormOp norm) -> ClipByNormOp {
    for (Operation *user : norm.getResult().getUsers())
      if (auto clip = dyn_cast<ClipByNormOp>(user))
        return clip;
    return nullptr;
  };
  std::function<void(OpOperand &, std::set<int> &)> stagesUsingOperand;
  stagesUsingOperand = [&](OpOperand &use, std::set<int> &out) {
    unsigned n = use.getOperandNumber();
    ClipByNormOp clip;
    unsigned gradient = 0; // the operand's index among the clipped gradients
    if (auto norm = dyn_cast<SquaredNormOp>(use.getOwner())) {
      clip = clippingOf(norm);
      gradient = n;
    } else if (auto owner = dyn_cast<ClipByNormOp>(use.getOwner()); owner && n > 0) {
      clip = owner; // (operand 0, the squared norm, goes wherever any is)
      gradient = n - 1;
    }
    if (clip) {
      for (Operation *user : clip.getClipped()[gradient].getUsers())
        stagesUsing(user, out);
      return;
    }
    auto unscale = dyn_cast<UnscaleGradientsOp>(use.getOwner());
    if (!unscale) {
      stagesUsing(use.getOwner(), out);
      return;
    }
    for (Value unscaled : unscale.getUnscaled())
      if (n == 0 || unscaled == unscale.getUnscaled()[n - 1])
        for (OpOperand &unscaledUse : unscaled.getUses())
          stagesUsingOperand(unscaledUse, out);
  };
  stagesUsing = [&](Operation *op, std::set<int> &out) {
        auto it = stageOf.find(op);
        if (it != stageOf.end()) {
          out.insert(it->second);
          return;
        }
        // Loss scaling's state (the scale, the count of good steps) is
        // kept and updated alike by every stage: each decides with the
        // job-wide found-inf, and each stage's checkpoint holds it.
        if (isa<LossScaleUpdateOp>(op)) {
          for (size_t j = 0; j < plan.stages.size(); ++j)
            out.insert(int(j));
          return;
        }
        for (Value result : op->getResults())
          for (OpOperand &use : result.getUses())
            stagesUsingOperand(use, out);
      };

  // The cluster.
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  std::string clusterName = symbolName(plan.cluster);
  if (module.lookupSymbol(clusterName)) {
    module.emitError() << "het-partition: the module already has a symbol @"
                       << clusterName;
    return signalPassFailure();
  }
  auto cluster = b.create<ClusterOp>(func.getLoc(), clusterName);
  cluster.getBody().push_back(new Block());
  OpBuilder inCluster = OpBuilder::atBlockEnd(&cluster.getBodyBlock());
  for (const auto &g : plan.groups) {
    auto vendor = symbolizeDeviceVendor(g.vendor);
    if (!vendor) {
      module.emitError() << "het-partition: plan group '" << g.name
                         << "' has unknown vendor '" << g.vendor << "'";
      return signalPassFailure();
    }
    inCluster.create<DeviceGroupOp>(func.getLoc(),
                                    inCluster.getStringAttr(g.name),
                                    DeviceKindAttr::get(ctx, *vendor, g.arch),
                                    inCluster.getI64IntegerAttr(g.count),
                                    inCluster.getF64FloatAttr(g.memoryGib),
                                    inCluster.getI64IntegerAttr(g.nodes));
  }
  for (const auto &l : plan.links)
    inCluster.create<LinkOp>(func.getLoc(), FlatSymbolRefAttr::get(ctx, l.a),
                             FlatSymbolRefAttr::get(ctx, l.b),
                             inCluster.getF64FloatAttr(l.bandwidthGbps),
                             inCluster.getF64FloatAttr(l.latencyUs));

  // Gradients are averaged over a stage's replicas with the plan's
  // algorithm; a stage with one replica has nothing to average.
  std::vector<CollectiveAlgorithm> algorithms;
  for (const auto &st : plan.stages) {
    auto algorithm = symbolizeCollectiveAlgorithm(st.allReduce);
    if (!algorithm) {
      module.emitError() << "het-partition: stage '" << st.name
                         << "' has unknown all_reduce '" << st.allReduce << "'";
      return signalPassFailure();
    }
    algorithms.push_back(*algorithm);
  }
  // Weighted losses make each replica's gradient its share of the
  // micro-batch's: the replicas' sum is the whole.
  ReductionKind combine = lossWeighted ? ReductionKind::Sum : ReductionKind::Avg;
  // An expert weight's gradient under expert parallelism is whole on the
  // replica holding the expert: its rows came from every replica, each
  // weighted by its share (het-expert-parallel).
  bool expertParallel = false;
  func.walk([&](MoEToExpertsOp) { expertParallel = true; });
  if (expertParallel && !lossWeighted) {
    module.emitError("het-partition: the step spreads experts over replicas "
                     "(het.moe_to_experts), whose gradients are summed on the replica holding "
                     "each expert: partition it with loss-weighted=true (het-compile does)");
    return signalPassFailure();
  }
  auto averaged = [&](int j, Value gradient, Location loc,
                      OpBuilder &ob) -> Value {
    if (plan.stages[j].replicas() <= 1 || isExpertHeldGradient(gradient))
      return gradient;
    return ob.create<AllReduceOp>(loc, gradient.getType(), gradient,
                                  SymbolRefAttr::get(ctx, plan.stages[j].name),
                                  combine, algorithms[j],
                                  CompressionKind::None, FloatAttr());
  };

  // A tied parameter's gradient: each stage's partial sum, summed over
  // every rank of the stages holding it (their replicas' losses are
  // weighted by share, so the sum is the whole gradient).
  std::vector<FlatSymbolRefAttr> tieGroups;
  for (const auto &tie : tied->ties) {
    std::string name = "tied";
    SmallVector<Attribute> members;
    for (int s : tie.stages) {
      name += "_" + plan.stages[s].name;
      members.push_back(FlatSymbolRefAttr::get(ctx, plan.stages[s].name));
    }
    Operation *existing = module.lookupSymbol(name);
    if (existing && !isa<TiedGroupOp>(existing)) {
      module.emitError() << "het-partition: the module already has a symbol @" << name;
      return signalPassFailure();
    }
    if (!existing)
      b.create<TiedGroupOp>(func.getLoc(), name, b.getArrayAttr(members));
    tieGroups.push_back(FlatSymbolRefAttr::get(ctx, name));
  }
  auto tieReduce = [&](size_t tie, Value partial, Location loc, OpBuilder &ob) -> Value {
    return ob.create<AllReduceOp>(loc, partial.getType(), partial, tieGroups[tie],
                                  ReductionKind::Sum, CollectiveAlgorithm::Ring,
                                  CompressionKind::None, FloatAttr());
  };

  // Each stage's inputs: the function arguments its ops use, in order.
  const size_t S = plan.stages.size();
  std::vector<std::vector<unsigned>> stageArgs(S);
  for (BlockArgument arg : func.getArguments()) {
    // Unlayered users (Adam's step counter) count for every stage that
    // uses their results.
    std::set<int> users;
    for (OpOperand &use : arg.getUses())
      stagesUsingOperand(use, users);
    for (int s : users)
      stageArgs[s].push_back(arg.getArgNumber());
  }

  // Build the stages.
  std::vector<StageOp> stages(S);
  std::vector<IRMapping> maps(S);
  b.setInsertionPoint(func);
  for (size_t j = 0; j < S; ++j) {
    const auto &st = plan.stages[j];
    SmallVector<Type> argTypes;
    for (unsigned a : stageArgs[j])
      argTypes.push_back(func.getArgument(a).getType());
    SmallVector<ReplicaGroupAttr> replicaGroups;
    for (const auto &g : st.replicaGroups)
      replicaGroups.push_back(ReplicaGroupAttr::get(
          ctx,
          SymbolRefAttr::get(b.getStringAttr(clusterName), {FlatSymbolRefAttr::get(ctx, g.group)}),
          g.replicas, g.samples));
    stages[j] = b.create<StageOp>(func.getLoc(), st.name, replicaGroups, st.layerBegin,
                                  st.layerEnd, st.tensorParallel, argTypes);
    // Expert parallelism: each replica (a group of its own) holds its
    // experts (convert-het-to-runtime keys its code by it).
    if (st.expertParallel()) {
      SmallVector<int64_t> counts;
      for (const auto &g : st.replicaGroups)
        counts.push_back(g.experts);
      stages[j]->setAttr(kReplicaExpertsAttrName, b.getDenseI64ArrayAttr(counts));
    }
    for (size_t i = 0; i < stageArgs[j].size(); ++i)
      maps[j].map(func.getArgument(stageArgs[j][i]),
                  stages[j].getBodyBlock().getArgument(i));
  }
  auto builderFor = [&](size_t j) { return OpBuilder(stages[j].getYield()); };

  // Channels: one per tensor between an ordered pair of stages.
  std::map<std::pair<int, int>, long> nextChannel;
  // (value, consumer stage) -> channel of its send.
  llvm::DenseMap<std::pair<Value, int>, long> channelOf;

  bool broken = false;
  // A value's copy inside stage j: mapped already, a received tensor, or a
  // constant-like unlayered op cloned on demand.
  std::function<Value(Value, int)> valueIn = [&](Value v, int j) -> Value {
    if (Value m = maps[j].lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    if (def && !stageOf.count(def)) {
      OpBuilder ob = builderFor(j);
      IRMapping &map = maps[j];
      for (Value operand : def->getOperands()) {
        Value copied = valueIn(operand, j);
        if (!copied)
          return Value();
        map.map(operand, copied);
      }
      Operation *copy = ob.clone(*def, map);
      return copy->getResult(cast<OpResult>(v).getResultNumber());
    }
    if (def) {
      int from = stageOf[def];
      auto sent = channelOf.find({v, j});
      if (sent == channelOf.end()) {
        // Only reachable if a value is needed before the op making it ran.
        def->emitError("het-partition: stage '")
            << plan.stages[j].name << "' needs this value before stage '"
            << plan.stages[from].name << "' sends it";
        broken = true;
        return Value();
      }
      long channel = sent->second;
      OpBuilder ob = builderFor(j);
      auto recv =
          ob.create<RecvOp>(def->getLoc(), v.getType(),
                            FlatSymbolRefAttr::get(ctx, plan.stages[from].name),
                            ob.getI64IntegerAttr(channel));
      if (backward.contains(def))
        recv->setAttr(HetDialect::getBackwardAttrName(), ob.getUnitAttr());
      maps[j].map(v, recv.getResult());
      return recv.getResult();
    }
    return Value(); // an argument no layered op declared: not reached
  };

  // A gradient combined for stage j's update: over the stage's replicas,
  // or for a tied parameter the stage's partial sum over the tie's ranks.
  auto reduceGradient = [&](int j, Value source, Location loc, OpBuilder &ob) -> Value {
    if (auto it = tied->tieOfPartial.find(source); it != tied->tieOfPartial.end()) {
      Value partial = valueIn(tied->ties[it->second].partials.at(j), j);
      return partial ? tieReduce(it->second, partial, loc, ob) : Value();
    }
    Value gradient = valueIn(source, j);
    return gradient ? averaged(j, gradient, loc, ob) : Value();
  };

  // Loss scaling (het-autodiff loss-scale): one het.unscale_gradients over
  // every parameter's gradient becomes one per stage over its own, after
  // the gradients are combined over the stage's replicas, and their
  // found-inf flags are combined over the whole job (max over every
  // working rank), so every rank skips the same steps and keeps the same
  // scale. The stage's optimizer updates then read its unscaled gradients.
  llvm::DenseSet<Value> reducedGradients;
  auto splitUnscale = [&](UnscaleGradientsOp unscale) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    for (size_t j = 0; j < S; ++j) {
      OpBuilder ob = builderFor(j);
      SmallVector<Value> gradients;
      SmallVector<unsigned> positions;
      for (auto [k, unscaled] : llvm::enumerate(unscale.getUnscaled())) {
        std::set<int> users;
        for (OpOperand &use : unscaled.getUses())
          stagesUsingOperand(use, users);
        if (!users.count(int(j)))
          continue;
        Value gradient = reduceGradient(int(j), unscale.getGradients()[k], unscale.getLoc(), ob);
        if (!gradient)
          return false;
        gradients.push_back(gradient);
        positions.push_back(unsigned(k));
      }
      Value found;
      if (gradients.empty()) {
        // A stage without parameters still takes part in the decision.
        found = ob.create<arith::ConstantOp>(
            unscale.getLoc(), DenseElementsAttr::get(scalar, ob.getF32FloatAttr(0.0f)));
      } else {
        // Its own copy of the scale, computed in the update (the one the
        // last stage's backward seeds with runs per micro-batch).
        IRMapping fresh;
        Operation *scaleDef = unscale.getScale().getDefiningOp();
        for (Value operand : scaleDef->getOperands())
          fresh.map(operand, valueIn(operand, int(j)));
        Value scale = ob.clone(*scaleDef, fresh)->getResult(0);
        auto local = ob.create<UnscaleGradientsOp>(unscale.getLoc(), scalar,
                                                   ValueRange(gradients).getTypes(), scale,
                                                   gradients);
        found = local.getFoundInf();
        for (auto [position, result] : llvm::zip(positions, local.getUnscaled())) {
          maps[j].map(unscale.getUnscaled()[position], result);
          reducedGradients.insert(unscale.getUnscaled()[position]);
        }
      }
      Value agreed = ob.create<AllReduceOp>(unscale.getLoc(), scalar, found,
                                            SymbolRefAttr::get(ctx, clusterName),
                                            ReductionKind::Max, CollectiveAlgorithm::Ring,
                                            CompressionKind::None, FloatAttr());
      maps[j].map(unscale.getFoundInf(), agreed);
    }
    return true;
  };

  // Gradient clipping (het-autodiff clip-grad-norm): the squared norm of
  // every gradient becomes each stage's of its own gradients (combined
  // over its replicas first, unless unscaling did), summed over the whole
  // job by one all-reduce; each of a stage's R replicas adds 1/R of its
  // stage's, which they all hold. Under tensor parallelism each of a
  // replica's T devices holds its own part of a split parameter's
  // gradient (1/R each) and the same whole gradient of the others (1/(R
  // T) each). Each stage then clips its own gradients with the job-wide
  // sum, so every rank scales by one factor.
  // The step argument a clipped gradient updates (-1: none found).
  auto parameterOf = [&](Value clipped) -> int {
    for (Operation *user : clipped.getUsers())
      if (isa<AdamOp, SGDOp>(user) && user->getOperand(1) == clipped)
        if (auto argument = dyn_cast<BlockArgument>(user->getOperand(0));
            argument && argument.getOwner() == &body)
          return int(argument.getArgNumber());
    return -1;
  };
  auto splitClipping = [&](SquaredNormOp norm) {
    ClipByNormOp clip = clippingOf(norm);
    if (!clip || clip.getGradients() != norm.getTensors()) {
      norm.emitError("het-partition: a het.squared_norm must feed one het.clip_by_norm of the "
                     "same gradients (as het-autodiff's clip-grad-norm builds them)");
      return false;
    }
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    for (size_t j = 0; j < S; ++j) {
      OpBuilder ob = builderFor(j);
      SmallVector<Value> gradients;
      SmallVector<unsigned> positions;
      for (auto [k, clipped] : llvm::enumerate(clip.getClipped())) {
        std::set<int> users;
        for (OpOperand &use : clipped.getUses())
          stagesUsingOperand(use, users);
        if (!users.count(int(j)))
          continue;
        Value source = clip.getGradients()[k];
        Value gradient = reducedGradients.contains(source)
                             ? valueIn(source, int(j))
                             : reduceGradient(int(j), source, clip.getLoc(), ob);
        if (!gradient)
          return false;
        gradients.push_back(gradient);
        positions.push_back(unsigned(k));
      }
      Value local;
      const double replicas = double(std::max<int64_t>(1, plan.stages[j].replicas()));
      const int64_t devices = std::max<int64_t>(1, plan.stages[j].tensorParallel);
      // Under tensor parallelism: the split parameters' gradients, then the
      // others (each device holds all of them).
      SmallVector<Value> split, whole;
      // Expert weights spread over the replicas: each holds its own.
      SmallVector<Value> expertHeld;
      // A tied parameter's whole gradient is held by each of the stages
      // holding a copy: each adds its share.
      std::map<size_t, SmallVector<Value>> tiedBy; // stages holding it -> gradients
      for (auto [gradient, position] : llvm::zip(gradients, positions)) {
        if (int tie = tied->tieOfGradient(clip.getGradients()[position]); tie >= 0) {
          tiedBy[tied->ties[tie].stages.size()].push_back(gradient);
          continue;
        }
        if (isExpertHeldGradient(gradient)) {
          expertHeld.push_back(gradient);
          continue;
        }
        if (devices == 1) {
          split.push_back(gradient);
          continue;
        }
        int parameter = parameterOf(clip.getClipped()[position]);
        if (parameter < 0) {
          clip.emitError("het-partition: a clipped gradient of stage '")
              << plan.stages[j].name
              << "' updates no parameter of the step, so under tensor parallelism it is "
                 "unknown whether each device holds a part of it or all of it";
          return false;
        }
        (splitParameters.count(argumentName(func, unsigned(parameter))) ? split : whole)
            .push_back(gradient);
      }
      if (gradients.empty()) { // a stage without parameters adds nothing
        local = ob.create<arith::ConstantOp>(
            norm.getLoc(), DenseElementsAttr::get(scalar, ob.getF32FloatAttr(0.0f)));
      } else {
        if (!split.empty())
          local = ob.create<SquaredNormOp>(norm.getLoc(), scalar, split,
                                           ob.getF64FloatAttr(1.0 / replicas));
        if (!whole.empty()) {
          Value kept = ob.create<SquaredNormOp>(norm.getLoc(), scalar, whole,
                                                ob.getF64FloatAttr(1.0 / (replicas * devices)));
          local = local ? ob.create<AddOp>(norm.getLoc(), scalar, local, kept).getResult() : kept;
        }
        if (!expertHeld.empty()) {
          Value kept = ob.create<SquaredNormOp>(norm.getLoc(), scalar, expertHeld,
                                                ob.getF64FloatAttr(1.0));
          local = local ? ob.create<AddOp>(norm.getLoc(), scalar, local, kept).getResult() : kept;
        }
        for (const auto &[holders, tiedGradients] : tiedBy) {
          Value kept = ob.create<SquaredNormOp>(norm.getLoc(), scalar, tiedGradients,
                                                ob.getF64FloatAttr(1.0 / (replicas * holders)));
          local = local ? ob.create<AddOp>(norm.getLoc(), scalar, local, kept).getResult() : kept;
        }
      }
      Value total = ob.create<AllReduceOp>(norm.getLoc(), scalar, local,
                                           SymbolRefAttr::get(ctx, clusterName),
                                           ReductionKind::Sum, CollectiveAlgorithm::Ring,
                                           CompressionKind::None, FloatAttr());
      maps[j].map(norm.getResult(), total);
      if (gradients.empty())
        continue;
      auto stageClip = ob.create<ClipByNormOp>(clip.getLoc(), ValueRange(gradients).getTypes(),
                                               total, gradients, clip.getMaxNormAttr());
      for (auto [position, result] : llvm::zip(positions, stageClip.getClipped())) {
        maps[j].map(clip.getClipped()[position], result);
        reducedGradients.insert(clip.getClipped()[position]);
      }
    }
    return true;
  };

  for (Operation &op : body) {
    if (auto unscale = dyn_cast<UnscaleGradientsOp>(op)) {
      if (!splitUnscale(unscale) || broken)
        return signalPassFailure();
      continue;
    }
    if (auto norm = dyn_cast<SquaredNormOp>(op)) {
      if (!splitClipping(norm) || broken)
        return signalPassFailure();
      continue;
    }
    auto it = stageOf.find(&op);
    if (it == stageOf.end())
      continue;
    int j = it->second;
    // Sends for results used in other stages come right after the op, so
    // every stage sends and receives in the program's order.
    for (Value operand : op.getOperands())
      valueIn(operand, j);
    if (broken)
      return signalPassFailure();
    OpBuilder ob = builderFor(j);
    Operation *copy = ob.clone(op, maps[j]);
    if (backward.contains(&op))
      copy->setAttr(HetDialect::getBackwardAttrName(), ob.getUnitAttr());
    // An optimizer update (gradient = operand 1) uses the replicas' average
    // (with loss scaling, averaged before unscaling).
    if (isa<SGDOp, AdamOp>(copy) && !reducedGradients.contains(op.getOperand(1))) {
      OpBuilder before(copy);
      auto tie = tied->tieOfPartial.find(op.getOperand(1));
      copy->setOperand(1, tie != tied->tieOfPartial.end()
                              ? tieReduce(tie->second, copy->getOperand(1), op.getLoc(), before)
                              : averaged(j, copy->getOperand(1), op.getLoc(), before));
    }
    for (Value result : op.getResults()) {
      // (A tied parameter's partial gradient stays in its stage: every
      // stage holding the parameter reads its own.)
      if (tied->tieOfPartial.count(result))
        continue;
      // Unlayered users are copied into the stages that use them, so those
      // stages receive the value too.
      std::set<int> consumers;
      for (OpOperand &use : result.getUses())
        stagesUsingOperand(use, consumers);
      consumers.erase(j);
      for (int c : consumers) {
        long channel = nextChannel[{j, c}]++;
        channelOf[{result, c}] = channel;
        auto send = ob.create<SendOp>(op.getLoc(), maps[j].lookup(result),
                                      FlatSymbolRefAttr::get(ctx, plan.stages[c].name),
                                      ob.getI64IntegerAttr(channel));
        if (backward.contains(&op))
          send->setAttr(HetDialect::getBackwardAttrName(), ob.getUnitAttr());
      }
    }
  }

  // Loss scaling's state update runs in every stage (each keeps the
  // scale), and so does the skip of Adam's step counter where the stage
  // counts steps: both are unlayered results no layered op reads.
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  std::function<bool(Value, size_t)> available = [&](Value v, size_t j) -> bool {
    if (maps[j].lookupOrNull(v))
      return true;
    Operation *def = v.getDefiningOp();
    return def && !stageOf.count(def) && !isa<LossScaleUpdateOp>(def) &&
           llvm::all_of(def->getOperands(), [&](Value o) { return available(o, j); });
  };
  for (Value r : returnOp.getOperands()) {
    Operation *def = r.getDefiningOp();
    if (!def || stageOf.count(def) || !(isa<LossScaleUpdateOp>(def) || isa<SelectOp>(def)))
      continue;
    for (size_t j = 0; j < S; ++j)
      if (!maps[j].lookupOrNull(r) &&
          llvm::all_of(def->getOperands(), [&](Value o) { return available(o, j); })) {
        for (Value operand : def->getOperands())
          valueIn(operand, int(j));
        builderFor(j).clone(*def, maps[j]);
      }
  }

  // Results: each stage yields what it made.
  std::vector<SmallVector<Value>> yields(S);
  std::vector<SmallVector<Attribute>> yieldNames(S);
  for (auto [index, r] : llvm::enumerate(returnOp.getOperands())) {
    Operation *def = r.getDefiningOp();
    auto it = def ? stageOf.find(def) : stageOf.end();
    StringAttr name = b.getStringAttr(resultName(func, index));
    // A tied parameter and its optimizer state leave every stage holding
    // a copy.
    if (auto copies = tied->resultCopies.find(unsigned(index)); copies != tied->resultCopies.end())
      for (auto [stage, copy] : copies->second) {
        yieldNames[stage].push_back(name);
        yields[stage].push_back(maps[stage].lookup(copy));
      }
    if (it == stageOf.end()) {
      // An unlayered result (Adam's step counter) leaves every stage that
      // computed a copy of it: each stage keeps its own. An argument or
      // constant returned as is needs nothing to run.
      for (size_t j = 0; j < S; ++j)
        if (Value copy = def ? maps[j].lookupOrNull(r) : Value()) {
          yields[j].push_back(copy);
          yieldNames[j].push_back(name);
        }
      continue;
    }
    int j = it->second;
    yieldNames[j].push_back(name);
    Value v = maps[j].lookup(r);
    // Without an optimizer in the step (het-autodiff optimizer=none), the
    // gradients themselves are results: average them before they leave.
    if (def->getName().getStringRef().ends_with("_grad")) {
      OpBuilder ob = builderFor(j);
      v = averaged(j, v, def->getLoc(), ob);
    }
    yields[j].push_back(v);
  }
  for (size_t j = 0; j < S; ++j) {
    YieldOp old = stages[j].getYield();
    OpBuilder ob(old);
    ob.create<YieldOp>(old.getLoc(), yields[j]);
    old.erase();
    SmallVector<Attribute> argNames;
    for (unsigned a : stageArgs[j])
      argNames.push_back(b.getStringAttr(argumentName(func, a)));
    stages[j]->setAttr(HetDialect::getArgNamesAttrName(), b.getArrayAttr(argNames));
    stages[j]->setAttr(HetDialect::getResultNamesAttrName(), b.getArrayAttr(yieldNames[j]));
  }
  // Replicas of one stage normalize over the whole micro-batch.
  for (size_t j = 0; j < S; ++j)
    if (plan.stages[j].replicas() > 1 &&
        failed(::het::partition::synchronizeBatchNorm(stages[j], microBatch)))
      return signalPassFailure();
  func.erase();
}

} // namespace
