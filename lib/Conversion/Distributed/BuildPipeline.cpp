//===- BuildPipeline.cpp - one module for every rank of a pipeline --------===//
//
// The plan says, per stage, which replicas take which share of every
// micro-batch. Stage code has static shapes, so each distinct share gets its
// own copy of the model: rebatched to the share with its loss weighted by
// it (het-rebatch), differentiated and fused (het-training-pipeline), cut
// into the plan's stages (het-partition, with gradients summed over
// replicas since the losses are weighted) and scheduled. From each copy the
// stages keep the functions of their replica groups with that share; all
// copies have the same structure (only shapes differ), so their channels
// agree, and comparing a channel's shape at two shares tells how many rows
// of it belong to each sample -- what the runtime needs to re-shard
// activations and gradients between stages of different splits.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Distributed.h"
#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "het/Dialect/Het/Transforms/TensorParallel.h"
#include "het/Partition/PartitionPlan.h"
#include "het/Partition/Passes.h"
#include "het/Plan/Error.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <set>
#include <sstream>

using namespace mlir;
using namespace mlir::het;

namespace {

InFlightDiagnostic error(ModuleOp module, const llvm::Twine &message) {
  return module.emitError() << "het-compile: " << message;
}

func::FuncOp trainingStep(ModuleOp module) {
  for (auto f : module.getOps<func::FuncOp>())
    if (f.getName().ends_with("_train_step"))
      return f;
  return nullptr;
}

/// Arguments with one row per sample: data, labels and token ids whose
/// first dimension is the batch (that of the first such argument).
std::vector<unsigned> batchedArguments(func::FuncOp f) {
  int64_t batch = 0;
  std::vector<unsigned> out;
  for (unsigned i = 0; i < f.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(f.getArgumentTypes()[i]);
    if (!type || type.getRank() < 1 || f.getArgAttr(i, HetDialect::getParamAttrName()) ||
        f.getArgAttr(i, HetDialect::getStateAttrName()))
      continue;
    if (batch == 0)
      batch = type.getDimSize(0);
    if (type.getDimSize(0) == batch)
      out.push_back(i);
  }
  return out;
}

/// The gradient all-reduces get --compression; collectives inside the
/// forward and backward passes (batch statistics, tensor parallelism) stay
/// exact.
LogicalResult applyCompression(ModuleOp module, const std::string &compression) {
  int kind = 0;
  double ratio = 0;
  std::string message;
  if (!parseCompression(compression, kind, ratio, message))
    return error(module, message);
  if (kind == static_cast<int>(CompressionKind::None))
    return success();
  module.walk([&](AllReduceOp reduce) {
    bool gradient = llvm::all_of(reduce->getUsers(), [](Operation *user) {
      return isa<SGDOp, AdamOp, YieldOp>(user);
    });
    if (!gradient || !isa_and_nonnull<StageOp>(SymbolTable::lookupNearestSymbolFrom(
                         reduce, reduce.getGroup())))
      return;
    reduce.setCompression(static_cast<CompressionKind>(kind));
    if (kind == static_cast<int>(CompressionKind::TopK))
      reduce.setTopkRatioAttr(FloatAttr::get(Float64Type::get(module.getContext()), ratio));
  });
  return success();
}

/// Calls `f(name, whole, now, marked)` for each argument of `split` (a
/// variant's training step) that is not batched and whose type differs
/// from the same argument of `step` (the whole model's); `marked`: it
/// carries het.expert_parallel.
void forEachResizedArgument(
    func::FuncOp step, func::FuncOp split, ArrayRef<unsigned> batchedArgs,
    llvm::function_ref<void(const std::string &, RankedTensorType, RankedTensorType, bool)> f) {
  std::set<std::string> batched;
  for (unsigned i : batchedArgs)
    batched.insert(argumentName(step, i));
  for (unsigned i = 0; i < split.getNumArguments(); ++i) {
    std::string name = argumentName(split, i);
    if (batched.count(name))
      continue;
    auto now = cast<RankedTensorType>(split.getArgumentTypes()[i]);
    for (unsigned k = 0; k < step.getNumArguments(); ++k) {
      if (argumentName(step, k) != name)
        continue;
      auto whole = cast<RankedTensorType>(step.getArgumentTypes()[k]);
      if (whole != now && whole.getRank() == now.getRank())
        f(name, whole, now, static_cast<bool>(split.getArgAttr(i, kExpertParallelAttrName)));
    }
  }
}

/// "f32 2 32 64" -> {32, 64}.
std::vector<int64_t> shapeOf(const std::string &type) {
  std::istringstream in(type);
  std::string element;
  size_t rank = 0;
  in >> element >> rank;
  std::vector<int64_t> shape(rank);
  for (int64_t &d : shape)
    in >> d;
  return shape;
}

/// Moves the functions and constant globals of `from` into `into`.
LogicalResult mergeInto(ModuleOp into, ModuleOp from) {
  SymbolTable symbols(into);
  for (Operation &op : llvm::make_early_inc_range(from.getBody()->getOperations())) {
    auto symbol = dyn_cast<SymbolOpInterface>(op);
    if (!symbol)
      continue;
    if (Operation *existing = symbols.lookup(symbol.getName())) {
      auto f = dyn_cast<func::FuncOp>(op);
      if (f && f.isExternal() && isa<func::FuncOp>(existing))
        continue; // a runtime entry point declared by both
      auto group = dyn_cast<TensorParallelGroupOp>(op);
      auto same = dyn_cast<TensorParallelGroupOp>(existing);
      if (group && same && group.getSize() == same.getSize())
        continue; // the same tensor-parallel group in both
      auto tied = dyn_cast<TiedGroupOp>(op);
      auto sameTied = dyn_cast<TiedGroupOp>(existing);
      if (tied && sameTied && tied.getStages() == sameTied.getStages())
        continue; // the same tied group in both
      return error(into, "internal error: two variants of the pipeline define @")
             << symbol.getName();
    }
    op.moveBefore(into.getBody(), into.getBody()->end());
    symbols.insert(&op);
  }
  return success();
}

} // namespace

bool mlir::het::parseCompression(const std::string &compression, int &kind, double &ratio,
                                 std::string &message) {
  StringRef text = compression;
  ratio = 0;
  if (text.consume_front("topk:")) {
    kind = static_cast<int>(CompressionKind::TopK);
    if (text.getAsDouble(ratio) || !(ratio > 0 && ratio <= 1)) {
      message = "--compression topk:<ratio> needs a ratio in (0, 1], got '" + text.str() + "'";
      return false;
    }
    return true;
  }
  std::optional<CompressionKind> parsed = symbolizeCompressionKind(text);
  if (!parsed || *parsed == CompressionKind::TopK) {
    message = "unknown --compression '" + compression +
              "' (use none, fp16, bf16, int8, topk:<ratio>)";
    return false;
  }
  kind = static_cast<int>(*parsed);
  return true;
}

FailureOr<OwningOpRef<ModuleOp>> mlir::het::buildPipeline(ModuleOp input,
                                                          const PipelineBuildOptions &options) {
  MLIRContext *ctx = input.getContext();
  if (options.schedule != "1f1b" && options.schedule != "gpipe")
    return error(input, "unknown --schedule '") << options.schedule << "' (use 1f1b or gpipe)";
  bool givenStep = static_cast<bool>(trainingStep(input));
  if (options.zeroStage < -1 || options.zeroStage > 3)
    return error(input, llvm::formatv("--zero {0}: use 0 (every replica holds all of its "
                                      "stage's training state), 1 (each holds a block of the "
                                      "optimizer state), 2 (and of the gradients) or 3 (and of "
                                      "the parameters)",
                                      options.zeroStage));

  // The training pipeline with each layer in `layers`' format.
  auto trainingPipeline = [&](const std::vector<std::string> &layers) {
    std::string text = options.trainingPipeline;
    if (!layers.empty())
      text += " layer-precisions=" + llvm::join(layers, ",");
    return text;
  };
  // The step at the model's own batch: how every rank initializes the
  // step's arguments, as a single-rank run would.
  OwningOpRef<ModuleOp> reference(input.clone());
  if (!givenStep) {
    PassManager pm(ctx);
    if (failed(parsePassPipeline("het-training-pipeline{" +
                                     trainingPipeline(options.layerFormats) + "}",
                                 pm,
                                 llvm::errs())) ||
        failed(pm.run(*reference)))
      return error(input, "could not build the training step (see the diagnostics above)");
  }
  func::FuncOp step = trainingStep(*reference);
  if (!step)
    return error(input, "no training step (@<model>_train_step) to partition");
  FailureOr<std::string> signature = describeStep(step);
  if (failed(signature))
    return failure();
  std::vector<unsigned> batchedArgs = batchedArguments(step);
  if (batchedArgs.empty())
    return error(input, "the training step has no data argument with a batch dimension");
  int64_t modelBatch = cast<RankedTensorType>(step.getArgumentTypes()[batchedArgs.front()])
                           .getDimSize(0);

  // The plan, with every replica's share resolved.
  ::het::partition::PartitionPlan plan;
  int64_t microBatches = 0, globalBatch = 0, microBatch = 0;
  try {
    plan = ::het::partition::readPartitionPlan(options.planFile);
    microBatches = options.microBatches > 0 ? options.microBatches : plan.microBatches;
    if (microBatches <= 0)
      microBatches = 1;
    globalBatch = plan.globalBatch > 0
                      ? plan.globalBatch
                      : modelBatch * plan.stages.front().replicas() * microBatches;
    if (globalBatch % microBatches != 0)
      return error(input, llvm::formatv("{0}: global_batch {1} does not split into {2} "
                                        "micro-batches{3}",
                                        options.planFile, globalBatch, microBatches,
                                        options.microBatches > 0 ? " (--micro-batches)" : ""));
    microBatch = globalBatch / microBatches;
    ::het::partition::resolveShares(plan, microBatch);
  } catch (const ::het::plan::PlanError &e) {
    return error(input, e.what());
  }
  std::vector<long> shares = ::het::partition::distinctShares(plan);
  // Each stage's ZeRO level: --zero for all, else the plan's.
  std::vector<int64_t> zeroLevels;
  for (const auto &st : plan.stages)
    zeroLevels.push_back(options.zeroStage >= 0 ? options.zeroStage : st.zero);
  bool sharding = llvm::any_of(zeroLevels, [](int64_t z) { return z > 0; });
  if (sharding && options.compression != "none")
    return error(input, (options.zeroStage > 0 ? "--zero " + std::to_string(options.zeroStage)
                                               : options.planFile + ": a stage's zero") +
                            " with --compression " + options.compression +
                            ": sharded data parallelism reduce-scatters exact gradients; "
                            "compress them without sharding");
  // Tensor parallelism, layer by layer from the stages' degrees; checked on
  // the forward model before anything is built, so a degree that does not
  // fit names the stage.
  std::vector<int64_t> layerDegrees, layerStages;
  bool tensorParallel = false;
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const auto &st = plan.stages[j];
    if (layerDegrees.size() < size_t(st.layerEnd)) {
      layerDegrees.resize(st.layerEnd, 1);
      layerStages.resize(st.layerEnd, -1);
    }
    for (long l = st.layerBegin; l < st.layerEnd; ++l) {
      layerDegrees[l] = st.tensorParallel;
      layerStages[l] = static_cast<int64_t>(j);
    }
    tensorParallel |= st.tensorParallel > 1;
  }
  if (tensorParallel && givenStep)
    return error(input, llvm::formatv("{0}: the plan splits stages over tensor-parallel "
                                      "devices, which needs the forward model; the input is a "
                                      "training step",
                                      options.planFile));
  if (tensorParallel) {
    func::FuncOp model;
    for (auto f : input.getOps<func::FuncOp>())
      if (!f.isExternal()) {
        model = f;
        break;
      }
    TensorParallelLayout layout;
    layout.degree = [&](int64_t layer) {
      return layer < int64_t(layerDegrees.size()) ? layerDegrees[layer] : int64_t(1);
    };
    layout.segment = [&](int64_t layer) {
      return layer < int64_t(layerStages.size()) ? layerStages[layer] : int64_t(-1);
    };
    TensorParallelReport report = analyzeTensorParallel(model, layout);
    for (const auto &[layer, problem] : report.problems)
      for (size_t j = 0; j < plan.stages.size(); ++j)
        if (layer >= plan.stages[j].layerBegin && layer < plan.stages[j].layerEnd)
          return error(input, llvm::formatv("{0}: stages[{1}] ('{2}').tensor_parallel: layer "
                                            "{3}: {4}",
                                            options.planFile, j, plan.stages[j].name, layer,
                                            problem));
    // A degree that splits nothing would only repeat the work on every device.
    for (size_t j = 0; j < plan.stages.size(); ++j) {
      const auto &st = plan.stages[j];
      if (st.tensorParallel <= 1)
        continue;
      int64_t split = 0;
      for (long l = st.layerBegin; l < st.layerEnd; ++l)
        split += report.splitParameters.count(l) ? report.splitParameters[l] : 0;
      if (split == 0)
        return error(input, llvm::formatv(
                                "{0}: stages[{1}] ('{2}').tensor_parallel: {3} devices per "
                                "replica split none of the layers [{4}, {5}): no linear layer "
                                "or embedding there has a number of features (or a vocabulary) "
                                "that {3} divides",
                                options.planFile, j, st.name, st.tensorParallel, st.layerBegin,
                                st.layerEnd));
    }
  }
  if (givenStep) {
    // A step cannot be specialised: every replica must take the step's batch.
    for (long share : shares)
      if (share != modelBatch)
        return error(input, llvm::formatv(
                                "{0}: the plan gives replicas {1} samples of each micro-batch "
                                "but the input is a training step of batch {2}, which cannot be "
                                "specialised; give het-compile the forward model instead",
                                options.planFile, share, modelBatch));
  }

  // Expert parallelism: per stage, the experts of each replica (replica
  // order; resolveShares made each replica a group of its own) and their
  // shares. Each replica holds other experts, so each member index is a
  // build of its own, as formats are.
  std::vector<std::string> expertStages; // het-expert-parallel entries but MEMBER
  int64_t members = 0;
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const auto &st = plan.stages[j];
    if (!st.expertParallel())
      continue;
    if (givenStep)
      return error(input, llvm::formatv("{0}: stages[{1}] ('{2}') spreads experts over its "
                                        "replicas ('experts'), which needs the forward model; "
                                        "the input is a training step",
                                        options.planFile, j, st.name));
    if (zeroLevels[j] > 0)
      return error(input, llvm::formatv("{0}: stages[{1}] ('{2}') spreads experts over its "
                                        "replicas ('experts') and shards its training state "
                                        "(zero {3}); expert parallelism with ZeRO is not "
                                        "supported yet",
                                        options.planFile, j, st.name, zeroLevels[j]));
    // Every mixture-of-experts layer of the stage has as many experts as
    // its replicas hold.
    int64_t held = 0, layers = 0;
    for (const auto &g : st.replicaGroups)
      held += g.experts;
    std::string mismatch;
    input.walk([&](MoEDispatchOp d) {
      auto layer = d->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName());
      if (!layer || layer.getInt() < st.layerBegin || layer.getInt() >= st.layerEnd ||
          d.getGradient())
        return;
      ++layers;
      int64_t E = cast<RankedTensorType>(d.getType()).getDimSize(0);
      if (E != held && mismatch.empty())
        mismatch = llvm::formatv("the replicas hold {0} experts in all, but layer {1}'s "
                                 "mixture of experts has {2}",
                                 held, layer.getInt(), E);
    });
    if (layers == 0)
      return error(input, llvm::formatv("{0}: stages[{1}] ('{2}').replica_groups: 'experts' "
                                        "spreads experts over the replicas, but layers [{3}, "
                                        "{4}) have no mixture-of-experts layer",
                                        options.planFile, j, st.name, st.layerBegin,
                                        st.layerEnd));
    if (!mismatch.empty())
      return error(input, llvm::formatv("{0}: stages[{1}] ('{2}').replica_groups: 'experts': "
                                        "{3}",
                                        options.planFile, j, st.name, mismatch));
    std::vector<std::string> experts, samples;
    for (const auto &g : st.replicaGroups) {
      experts.push_back(std::to_string(g.experts));
      samples.push_back(std::to_string(g.samples));
    }
    members = std::max<int64_t>(members, st.replicaGroups.size());
    expertStages.push_back(llvm::formatv("{0}:{1}:{2}:{3}:{4}", st.name, st.layerBegin,
                                         st.layerEnd, llvm::join(experts, "/"),
                                         llvm::join(samples, "/")));
  }
  bool expertParallel = members > 0;
  // Whether stage `st` has a member `m` taking `share` samples.
  auto holds = [&](const ::het::partition::StageInfo &st, long share, int64_t m) {
    return st.expertParallel() && m < int64_t(st.replicaGroups.size()) &&
           st.replicaGroups[m].samples == share;
  };

  PipelineDescription description;
  std::vector<PipelineDescription::Shard> shards;
  std::vector<std::string> expertSharded;
  std::vector<std::string> sharded; // het-shard-optimizer's state, every variant's
  OwningOpRef<ModuleOp> merged;
  // Each channel's type at each share, to tell how it splits by sample.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::map<long, std::string>> channelTypes;
  // A stage whose replicas train in different formats is built once per
  // format: each build puts every such stage that has the format in it
  // (the others in their first), and keeps only those stages' replicas of
  // that format; the first build also keeps every stage of one format.
  std::vector<std::string> builds;
  for (const auto &formats : options.replicaFormats)
    for (const std::string &f : formats)
      if (!llvm::is_contained(builds, f))
        builds.push_back(f);
  auto mixed = [&](size_t j) {
    return j < options.replicaFormats.size() && !options.replicaFormats[j].empty();
  };
  if (builds.empty())
    builds.push_back("");
  else if (givenStep)
    return error(input, llvm::formatv("{0}: replicas of a stage train in different formats, "
                                      "which needs the forward model; the input is a training "
                                      "step",
                                      options.planFile));
  struct VariantBuild {
    long share;
    std::string format;
    int64_t member; // expert parallelism: the replica of each such stage built
  };
  std::vector<VariantBuild> variants;
  for (long share : shares)
    for (const std::string &build : builds)
      for (int64_t member = 0; member < std::max<int64_t>(members, 1); ++member) {
        // A member index no stage's replicas of this share have builds
        // nothing the other builds do not.
        bool needed = member == 0 || llvm::any_of(plan.stages, [&](const auto &st) {
                        return holds(st, share, member);
                      });
        if (needed)
          variants.push_back({share, build, member});
      }
  for (const auto &[share, build, member] : variants) {
    bool firstBuild = build == builds.front();
    std::vector<std::string> layers = options.layerFormats;
    for (size_t j = 0; j < options.replicaFormats.size() && j < plan.stages.size(); ++j)
      if (llvm::is_contained(options.replicaFormats[j], build))
        for (long l = plan.stages[j].layerBegin; l < plan.stages[j].layerEnd; ++l)
          if (size_t(l) < layers.size())
            layers[l] = build;
    OwningOpRef<ModuleOp> variant(input.clone());
    PassManager pm(ctx);
    std::string pipeline;
    if (!givenStep) {
      pipeline = llvm::formatv("het-rebatch{{samples={0} micro-batch={1}}", share, microBatch);
      if (tensorParallel) {
        std::string degrees, stages;
        for (size_t l = 0; l < layerDegrees.size(); ++l) {
          degrees += (l ? "," : "") + std::to_string(layerDegrees[l]);
          stages += (l ? "," : "") + std::to_string(layerStages[l]);
        }
        pipeline += ",het-tensor-parallel{layer-degrees=" + degrees + " layer-segments=" +
                    stages + "}";
      }
      if (expertParallel) {
        std::vector<std::string> entries;
        size_t e = 0;
        for (const auto &st : plan.stages) {
          if (!st.expertParallel())
            continue;
          // A stage without this member (of this share) is built as its
          // member 0 and kept from another build.
          int64_t here = holds(st, share, member) ? member : 0;
          entries.push_back(expertStages[e++] + ":" + std::to_string(here));
        }
        pipeline += llvm::formatv(",het-expert-parallel{{stages={0} samples={1}}",
                                  llvm::join(entries, ","), share);
      }
      pipeline += ",het-training-pipeline{" + trainingPipeline(layers) + "}";
    }
    if (!pipeline.empty() &&
        (failed(parsePassPipeline(pipeline, pm, llvm::errs())) || failed(pm.run(*variant))))
      return error(input, llvm::formatv("could not build the training step for replicas "
                                        "taking {0} samples of each micro-batch (see the "
                                        "diagnostics above)",
                                        share));
    pm.clear();
    // Which step arguments the variant gave another shape than the whole
    // step's: blocks of the experts (the split weights and their optimizer
    // state: axis 0 shorter), else tensor-parallel shards.
    if (expertParallel || (tensorParallel && description.stages.empty()))
      forEachResizedArgument(
          step, trainingStep(*variant), batchedArgs,
          [&](const std::string &name, RankedTensorType whole, RankedTensorType now,
              bool marked) {
            if (llvm::is_contained(expertSharded, name))
              return;
            if (expertParallel &&
                (marked || (whole.getDimSize(0) != now.getDimSize(0) &&
                            whole.getShape().drop_front() == now.getShape().drop_front()))) {
              expertSharded.push_back(name);
              return;
            }
            if (!tensorParallel || !description.stages.empty())
              return;
            for (int64_t axis = 0; axis < whole.getRank(); ++axis)
              if (whole.getDimSize(axis) != now.getDimSize(axis))
                shards.push_back({name, axis, whole.getDimSize(axis) / now.getDimSize(axis)});
          });
    // Options set in code, not parsed from text: paths may hold any character.
    HetPartitionOptions partition;
    partition.planFile = options.planFile;
    partition.functionName = step.getName().str();
    partition.microBatchSamples = microBatch;
    partition.lossWeighted = !givenStep;
    // (Gradient clipping counts a split parameter's squares on each device.)
    std::vector<std::string> splitNames;
    for (const auto &shard : shards)
      splitNames.push_back(shard.name);
    partition.tensorParallelSplit = splitNames;
    pm.addPass(createHetPartition(partition));
    if (sharding) {
      HetShardOptimizerOptions shard;
      shard.samples = share;
      shard.stageLevels = zeroLevels;
      pm.addPass(createHetShardOptimizer(shard));
    }
    HetPipelineScheduleOptions order;
    order.schedule = options.schedule;
    order.microBatches = microBatches;
    pm.addPass(createHetPipelineSchedule(order));
    if (failed(pm.run(*variant)))
      return error(input, llvm::formatv("could not build the stages for replicas taking {0} "
                                        "samples of each micro-batch (see the diagnostics above)",
                                        share));
    if (failed(applyCompression(*variant, options.compression)))
      return failure();
    for (auto stage : variant->getOps<StageOp>())
      if (auto names = stage->getAttrOfType<ArrayAttr>(kShardedStateAttrName))
        for (auto name : names.getAsValueRange<StringAttr>())
          if (!llvm::is_contained(sharded, name.str()))
            sharded.push_back(name.str());
    // Which replicas this build is for (convert-het-to-runtime reads it).
    if (!build.empty()) {
      for (auto [j, stage] : llvm::enumerate(variant->getOps<StageOp>())) {
        if (mixed(j)) {
          if (options.replicaFormats[j].size() != plan.stages[j].replicaGroups.size())
            return error(input, "internal error: no format for each replica group of stage " +
                                    plan.stages[j].name);
          SmallVector<Attribute> formats;
          for (const std::string &format : options.replicaFormats[j])
            formats.push_back(StringAttr::get(ctx, format));
          stage->setAttr(kReplicaFormatsAttrName, ArrayAttr::get(ctx, formats));
          stage->setAttr(kBuiltFormatAttrName, StringAttr::get(ctx, build));
        } else if (!firstBuild) {
          stage->setAttr(kBuiltFormatAttrName, StringAttr::get(ctx, "-"));
        }
      }
    }
    // Which replicas this build is for: an expert-parallel stage keeps
    // its member of this build, the other stages are kept from member 0's
    // build (-1: none here).
    if (expertParallel) {
      auto i64 = IntegerType::get(ctx, 64);
      for (auto [j, stage] : llvm::enumerate(variant->getOps<StageOp>())) {
        const auto &st = plan.stages[j];
        if (st.expertParallel()) {
          stage->setAttr(kBuiltMemberAttrName,
                         IntegerAttr::get(i64, holds(st, share, member) ? member : -1));
        } else if (member != 0) {
          stage->setAttr(kBuiltMemberAttrName, IntegerAttr::get(i64, -1));
        }
      }
    }
    if (options.stagesOutput) {
      *options.stagesOutput << "// replicas taking " << share
                            << " samples of each micro-batch"
                            << (build.empty() ? std::string()
                                              : ", the stages whose replicas differ in format "
                                                "in " + build)
                            << (expertParallel
                                    ? llvm::formatv(", expert-parallel member {0}", member).str()
                                    : std::string())
                            << "\n";
      variant->print(*options.stagesOutput);
      *options.stagesOutput << "\n";
    }
    FailureOr<PipelineDescription> lowered = lowerPipelineStages(*variant, share, options.gpu);
    if (failed(lowered))
      return failure();
    for (const auto &channel : lowered->channels) {
      auto [known, added] =
          channelTypes[{channel.from, channel.to, channel.channel}].insert({share, channel.type});
      if (!added && known->second != channel.type)
        return error(input, llvm::formatv("internal error: stage {0} sends stage {1} (channel "
                                          "{2}) {3} in one format's build and {4} in {5}'s",
                                          lowered->stages[channel.from].name,
                                          lowered->stages[channel.to].name, channel.channel,
                                          known->second, channel.type, build));
    }
    if (!merged) {
      description = *lowered;
      merged = std::move(variant);
      continue;
    }
    if (lowered->stages.size() != description.stages.size() ||
        lowered->channels.size() != description.channels.size())
      return error(input, "internal error: the pipeline's variants differ in structure");
    for (size_t j = 0; j < lowered->stages.size(); ++j)
      for (auto &v : lowered->stages[j].variants)
        description.stages[j].variants.push_back(std::move(v));
    if (failed(mergeInto(*merged, *variant)))
      return failure();
  }

  // How each channel splits by sample: rows per sample from two shares.
  for (PipelineDescription::Channel &channel : description.channels) {
    const auto &types = channelTypes[{channel.from, channel.to, channel.channel}];
    if (types.size() != shares.size())
      return error(input, "internal error: a channel exists at some shares only");
    if (types.size() < 2) {
      channel.rowsPerSample = -1; // one share everywhere: replicas line up
      continue;
    }
    auto [b1, t1] = *types.begin();
    auto [b2, t2] = *std::next(types.begin());
    std::vector<int64_t> s1 = shapeOf(t1), s2 = shapeOf(t2);
    if (s1 == s2) {
      channel.rowsPerSample = 0;
      continue;
    }
    bool split = !s1.empty() && s1.size() == s2.size() && s1[0] % b1 == 0 &&
                 s1[0] / b1 * b2 == s2[0] &&
                 std::equal(s1.begin() + 1, s1.end(), s2.begin() + 1);
    if (!split)
      return error(input, llvm::formatv(
                              "stage {0} sends stage {1} a tensor (channel {2}) of shape {3} at "
                              "{4} samples and {5} at {6}: it is not split by sample along its "
                              "first dimension, so it cannot move between stages of different "
                              "splits",
                              description.stages[channel.from].name,
                              description.stages[channel.to].name, channel.channel, t1, b1, t2,
                              b2));
    channel.rowsPerSample = s1[0] / b1;
  }
  description.globalBatch = globalBatch;
  description.shards = shards;
  description.expertSharded = expertSharded;
  description.shareSharded = sharded;
  description.microBatches = microBatches;
  description.predictedSeconds = options.predictedSeconds;
  description.planKey = options.planKey;
  for (unsigned i : batchedArgs)
    description.batched.push_back(argumentName(step, i));

  SmallVector<Attribute> entries;
  for (const auto &stage : description.stages)
    for (const auto &variant : stage.variants)
      for (const auto &function : variant.functions)
        entries.push_back(StringAttr::get(ctx, function.symbol));
  (*merged)->setAttr("hetrt.entries", ArrayAttr::get(ctx, entries));
  (*merged)->setAttr("hetrt.model_info", StringAttr::get(ctx, description.text(*signature)));
  return merged;
}
