//===- ConvertHetToRuntime.cpp - pipeline stages to functions and calls ---===//
//
// Input: the output of het-partition and het-pipeline-schedule (a
// het.cluster and one het.stage per pipeline stage). Output: for each stage
// and each of its variants (a distinct share of the micro-batch and kernel
// library among its replica groups) three functions the runtime calls,
//
//   @<stage>[_<variant>]_forward   one micro-batch's forward pass: data and
//                      parameters in; the loss (last stage) and the
//                      activations the backward pass needs ("saved.<k>") out;
//   @<stage>[_<variant>]_backward  one micro-batch's backward pass: saved
//                      activations and parameters in; the gradients
//                      ("grad.<k>") out;
//   @<stage>[_<variant>]_update    once per step: the gradients, summed over
//                      the micro-batches and divided by their count by the
//                      runtime, are combined over the stage's replicas and
//                      applied; new parameters and optimizer state out,
//
// with het.send / het.recv and the collectives turned into calls
//
//   hetrt_send(meta, buffers)        meta words: peer stage, channel, bytes
//                                    per element
//   hetrt_recv(meta, buffers)        the same, for the source stage
//   hetrt_all_reduce(meta, buffers)  reduction, algorithm, compression,
//                                    top-k ratio (bits), communicator
//   hetrt_all_gather(meta, buffers)  axis, communicator, by share (0/1)
//   hetrt_reduce_scatter(meta, ...)  reduction, axis, communicator, by share
//   hetrt_shard(meta, buffers)       axis, communicator (no communication)
//   hetrt_moe_to_experts(meta, ...)  communicator, each member's experts
//   hetrt_moe_from_experts(meta, ...) the same (expert parallelism)
//
// in the KernelCall convention of the compute kernels. The communicator is
// 0 for the stage's data-parallel replicas (a collective over the stage:
// gradient all-reduces, batch statistics), 1 for the tensor-parallel
// devices of one replica (a collective over a het.tensor_parallel_group)
// and 2 for every working rank of the job (a collective over the
// het.cluster: loss scaling's found-inf, once per step in the update).
// Which ranks a rank talks to is the runtime's business
// (lib/Runtime/Pipeline*.cpp): the IR says stages, the runtime maps them to
// ranks and re-shards by sample range between stages of different splits.
// het.tensor_parallel_copy is the identity.
//
// Within a phase the receives move to the start, ordered by source and
// channel: channels number a stage pair's tensors in send order, so both
// sides then agree on the order of the messages between them, and the
// runtime can post a phase's receives together with the sends still queued
// from the previous phase (no deadlock between neighbours that both send).
// Gradient all-reduces (those feeding an optimizer update) run in the update
// phase; every other collective runs where its operands are made.
//
// Each function carries het.kernel_library from its replica group's device
// kind (cpu/onednn -> dnnl, cpu/mlir -> mlir, cpu/x86_64 -> the compile-wide
// default), so convert-het-to-linalg lowers each variant for its device. A
// stage on an NVIDIA or AMD kind het compiles for (include/het/Conversion/
// GPU.h) gets every op generated (mlir) and hetrt.gpu_target ("cuda sm_90"):
// the GPU lowering maps those functions onto kernels, or with gpu-emulate
// runs the same kernels on the host. Any other kind is an error naming the
// stage, before anything is built.
//
//===----------------------------------------------------------------------===//

#include "../HetToLinalg/Lowering.h"
#include "het/Conversion/Distributed.h"
#include "het/Conversion/GPU.h"
#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>
#include <set>

using namespace mlir;
using namespace mlir::het;

namespace {

enum Phase { Forward = 0, Backward = 1, Update = 2, Anywhere = 3 };
const char *phaseNames[] = {"forward", "backward", "update"};

int64_t bitsOf(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

int64_t elementBytes(Type type) {
  return (cast<RankedTensorType>(type).getElementTypeBitWidth() + 7) / 8;
}

/// What a replica group's functions are compiled with.
struct KernelChoice {
  /// As the runtime prints it: dnnl, mlir, reference or default (the
  /// compile-wide library) on CPUs; cuda or hip on GPUs, with -emulated
  /// when the kernels run on the host.
  std::string library;
  /// A GPU stage's target ("cuda sm_90"); empty on CPUs.
  std::string gpuTarget;
  /// A GPU stage's kernel library: mlir (all generated) or cudnn.
  std::string gpuKernels;
  /// The number format, where the replicas of the stage train in
  /// different ones (het.replica_formats); empty otherwise.
  std::string format;
  /// What tells variants apart: the library, a GPU's architecture, and the
  /// format where a stage's replicas differ in it.
  std::string key() const {
    std::string out =
        gpuTarget.empty() ? library : library + "_" + gpuTarget.substr(gpuTarget.find(' ') + 1);
    return format.empty() ? out : out + "_" + format;
  }
};

FailureOr<KernelChoice> kernelsFor(StageOp stage, DeviceGroupOp group, const GpuStageOptions &gpu) {
  DeviceKindAttr kind = group.getKind();
  StringRef arch = kind.getArch();
  if (kind.getVendor() == DeviceVendor::CPU) {
    if (arch == "onednn")
      return KernelChoice{"dnnl", "", "", ""};
    if (arch == "mlir")
      return KernelChoice{"mlir", "", "", ""};
    if (arch == "reference")
      return KernelChoice{"reference", "", "", ""};
    return KernelChoice{"default", "", "", ""};
  }
  llvm::Expected<GpuTarget> target = gpuTargetOfKind(stringifyDeviceVendor(kind.getVendor()), arch);
  if (!target)
    return stage.emitError() << "convert-het-to-runtime: stage '" << stage.getSymName()
                             << "' has replicas on group '" << group.getSymName() << "' (" << kind
                             << "): " << llvm::toString(target.takeError())
                             << "; place it on another group";
  target->vendorLibraries = gpu.vendorLibraries;
  std::string library = target->runtimeName().str();
  if (gpu.emulate)
    library += "-emulated";
  return KernelChoice{library, target->label(), kernelLibraryName(target->kernelLibrary()).str(),
                      ""};
}

/// 0: over the stage's data-parallel replicas; 1: over the tensor-parallel
/// devices of a replica; 2: over every working rank of the job (a
/// collective over the het.cluster: loss scaling's found-inf); 3 + k: over
/// every rank of the stages of the module's k-th het.tied_group (a tied
/// parameter's gradient).
int64_t communicatorOf(Operation *op, SymbolRefAttr group) {
  if (SymbolTable::lookupNearestSymbolFrom<TensorParallelGroupOp>(op, group))
    return 1;
  if (auto tied = SymbolTable::lookupNearestSymbolFrom<TiedGroupOp>(op, group)) {
    int64_t index = 0;
    for (auto other : tied->getParentOfType<ModuleOp>().getOps<TiedGroupOp>()) {
      if (other == tied)
        break;
      ++index;
    }
    return 3 + index;
  }
  return SymbolTable::lookupNearestSymbolFrom<ClusterOp>(op, group) ? 2 : 0;
}

/// A collective over the whole job: once per step, in the update.
bool jobWide(Operation *op) {
  auto reduce = dyn_cast<AllReduceOp>(op);
  return reduce && communicatorOf(op, reduce.getGroup()) == 2;
}

/// A gradient all-reduce: its result only feeds optimizer updates (or the
/// loss scaler's unscaling and gradient clipping before them) or leaves the
/// stage.
bool feedsUpdate(Operation *op) {
  // (A job-wide all-reduce is the update's too, but no gradient's: in a
  // stage without parameters, gradient clipping's sum has no user.)
  if (!isa<AllReduceOp>(op) || jobWide(op))
    return false;
  return llvm::all_of(op->getUsers(), [](Operation *user) {
    return isa<SGDOp, AdamOp, UnscaleGradientsOp, SquaredNormOp, ClipByNormOp, YieldOp>(user);
  });
}

/// Ops of the once-per-step update: the optimizer, loss scaling's
/// unscaling, its job-wide decision and its state update, gradient clipping.
bool updateOp(Operation *op) {
  // Sharded optimizer state (het-shard-optimizer): the gradient's
  // reduce-scatter, the parameter's block and the updated blocks' gather;
  // not those it put in the forward and backward passes (ZeRO-2/3).
  auto scatter = dyn_cast<ReduceScatterOp>(op);
  auto gather = dyn_cast<AllGatherOp>(op);
  bool byShare = ((scatter && scatter.getByShare()) || (gather && gather.getByShare())) &&
                 !op->hasAttr(HetDialect::getBackwardAttrName()) &&
                 !(gather && isa<BlockArgument>(gather.getInput()));
  // With sharded state gradient clipping adds the squared norm of the
  // blocks to that of the whole gradients (het-shard-optimizer).
  bool normSum = isa<AddOp>(op) && llvm::all_of(op->getOperands(), [](Value v) {
                   return v.getDefiningOp<SquaredNormOp>();
                 });
  return isa<SGDOp, AdamOp, UnscaleGradientsOp, LossScaleUpdateOp, SquaredNormOp, ClipByNormOp,
             ShardOp>(op) ||
         feedsUpdate(op) || jobWide(op) || byShare || normSum;
}

struct StageLowering {
  ModuleOp module;
  StageOp stage;
  std::map<std::string, int> stageIndex;

  /// Adds the three functions of `variant` (named with `prefix`).
  LogicalResult lower(const std::string &prefix, const KernelChoice &kernels,
                      PipelineDescription::Variant &variant);

private:
  DenseMap<Operation *, Phase> phase;
  void assignPhases();
};

void StageLowering::assignPhases() {
  phase.clear();
  Block &body = stage.getBodyBlock();
  // tensor_parallel_copy is the identity once the backward pass exists: its
  // uses take its input (so a replicated input the backward pass needs is
  // read as the stage's input, not passed on as a saved activation).
  for (auto copy : llvm::make_early_inc_range(body.getOps<TensorParallelCopyOp>())) {
    copy.getResult().replaceAllUsesWith(copy.getInput());
    copy.erase();
  }
  for (Operation &op : body.without_terminator()) {
    Phase p = Forward;
    if (op.getNumOperands() == 0 && op.hasTrait<OpTrait::ConstantLike>())
      p = Anywhere; // copied into each function that uses it
    else if (updateOp(&op))
      p = Update;
    else if (op.hasAttr(HetDialect::getBackwardAttrName()))
      p = Backward;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp()) {
        Phase q = phase.lookup(def);
        if (q != Anywhere && q > p)
          p = q;
      }
    phase[&op] = p;
  }
  // Unlayered ops that are neither constants nor collectives (Adam's step
  // counter) run in the first phase that needs them.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (op.hasAttr(HetDialect::getLayerAttrName()) || phase[&op] == Anywhere ||
        updateOp(&op) ||
        isa<SGDOp, AdamOp, AllReduceOp, AllGatherOp, ReduceScatterOp, ShardOp, SendOp, RecvOp>(op) ||
        op.hasAttr(HetDialect::getBackwardAttrName()))
      continue;
    Phase earliest = Update;
    for (Operation *user : op.getUsers())
      if (!isa<YieldOp>(user) && phase.lookup(user) != Anywhere)
        earliest = std::min(earliest, phase.lookup(user));
    Phase operands = Forward;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (phase.lookup(def) != Anywhere)
          operands = std::max(operands, phase.lookup(def));
    phase[&op] = std::max(earliest, operands);
  }
}

LogicalResult StageLowering::lower(const std::string &prefix, const KernelChoice &kernels,
                                   PipelineDescription::Variant &variant) {
  MLIRContext *ctx = module.getContext();
  assignPhases();
  auto argNames = stage->getAttrOfType<ArrayAttr>(HetDialect::getArgNamesAttrName());
  auto resultNames = stage->getAttrOfType<ArrayAttr>(HetDialect::getResultNamesAttrName());
  Block &body = stage.getBodyBlock();
  YieldOp yield = stage.getYield();
  if (!argNames || argNames.size() != body.getNumArguments() || !resultNames ||
      resultNames.size() != yield.getNumOperands())
    return stage.emitError("convert-het-to-runtime: stage '")
           << stage.getSymName()
           << "' lacks het.arg_names/het.result_names (made by het-partition)";
  // A stage without parameters (pooling, the loss) has nothing to update;
  // one whose combined gradients are its results (het-autodiff
  // optimizer=none) would leave training to someone else.
  bool updates = false, combines = false;
  body.walk([&](Operation *op) {
    updates |= isa<SGDOp, AdamOp>(op);
    combines |= feedsUpdate(op);
  });
  if (!updates && combines)
    return stage.emitError("convert-het-to-runtime: stage '")
           << stage.getSymName()
           << "' returns its gradients instead of applying them; a pipelined step needs an "
              "optimizer in it "
              "(het-autodiff optimizer=sgd or adam)";

  // Values that cross phases, and what they are called at the boundary.
  DenseMap<Value, std::string> boundaryName;
  unsigned saved = 0, gradients = 0;
  for (Operation &op : body.without_terminator()) {
    Phase p = phase[&op];
    if (p == Anywhere)
      continue;
    for (Value result : op.getResults())
      for (Operation *user : result.getUsers()) {
        if (isa<YieldOp>(user))
          continue;
        Phase q = phase[user];
        if (q == Anywhere || q <= p)
          continue;
        if (p == Forward && q == Update)
          return op.emitError("convert-het-to-runtime: a forward value feeds the optimizer "
                              "update directly; only gradients can be accumulated over "
                              "micro-batches");
        if (!boundaryName.count(result))
          boundaryName[result] = p == Forward ? llvm::formatv("saved.{0}", saved++).str()
                                              : llvm::formatv("grad.{0}", gradients++).str();
      }
  }
  // What each phase yields.
  std::vector<std::vector<std::pair<Value, std::string>>> yielded(3);
  for (auto [value, name] : llvm::zip(yield.getOperands(), resultNames)) {
    std::string text = cast<StringAttr>(name).getValue().str();
    Operation *def = value.getDefiningOp();
    if (!def)
      continue; // an argument returned unchanged: nothing to carry
    Phase p = phase[def];
    if (p == Backward)
      return def->emitError("convert-het-to-runtime: the stage's result '")
             << text
             << "' is a gradient; a pipelined step needs an optimizer in it (het-autodiff "
                "optimizer=sgd or adam)";
    if (p == Anywhere)
      continue;
    yielded[p].push_back({value, text});
  }

  OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
  for (int p = Forward; p <= Update; ++p) {
    std::string functionName = prefix + "_" + phaseNames[p];
    if (module.lookupSymbol(functionName))
      return stage.emitError("convert-het-to-runtime: the module already has a symbol @")
             << functionName;
    auto function = top.create<func::FuncOp>(stage.getLoc(), functionName,
                                             FunctionType::get(ctx, {}, {}));
    Block *entry = function.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    IRMapping map;
    SmallVector<std::string> inputNames;
    auto addInput = [&](Value v, std::string name) {
      BlockArgument arg = entry->addArgument(v.getType(), v.getLoc());
      map.map(v, arg);
      inputNames.push_back(std::move(name));
    };
    // Receives first, by source and channel (see the file comment).
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      if (phase[&op] == p)
        ops.push_back(&op);
    std::stable_sort(ops.begin(), ops.end(), [&](Operation *a, Operation *b) {
      auto ra = dyn_cast<RecvOp>(a), rb = dyn_cast<RecvOp>(b);
      if (!ra || !rb)
        return ra && !rb;
      int sa = stageIndex[ra.getSource().str()], sb = stageIndex[rb.getSource().str()];
      return sa != sb ? sa < sb : ra.getChannel() < rb.getChannel();
    });
    std::function<Value(Value)> valueOf = [&](Value v) -> Value {
      if (Value m = map.lookupOrNull(v))
        return m;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        addInput(v, cast<StringAttr>(argNames[arg.getArgNumber()]).getValue().str());
        return map.lookup(v);
      }
      Operation *def = v.getDefiningOp();
      if (phase[def] == Anywhere) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(entry);
        Operation *copy = b.clone(*def);
        for (auto [from, to] : llvm::zip(def->getResults(), copy->getResults()))
          map.map(from, to);
        return map.lookup(v);
      }
      addInput(v, boundaryName.lookup(v));
      return map.lookup(v);
    };
    for (Operation *op : ops) {
      for (Value operand : op->getOperands())
        valueOf(operand);
      Location loc = op->getLoc();
      if (auto send = dyn_cast<SendOp>(op)) {
        emitRuntimeCall(b, module, loc, "hetrt_send", map.lookup(send.getValue()), {},
                        {stageIndex[send.getTarget().str()], send.getChannel(),
                         elementBytes(send.getValue().getType())});
      } else if (auto recv = dyn_cast<RecvOp>(op)) {
        SmallVector<Value> r =
            emitRuntimeCall(b, module, loc, "hetrt_recv", {}, recv.getType(),
                            {stageIndex[recv.getSource().str()], recv.getChannel(),
                             elementBytes(recv.getType())},
                            /*retainsBuffers=*/true);
        map.map(recv.getResult(), r.front());
      } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
        double ratio = reduce.getTopkRatio() ? reduce.getTopkRatio()->convertToDouble() : 0.0;
        SmallVector<Value> r = emitRuntimeCall(
            b, module, loc, "hetrt_all_reduce", map.lookup(reduce.getInput()), reduce.getType(),
            {static_cast<int64_t>(reduce.getReduction()),
             static_cast<int64_t>(reduce.getAlgorithm()),
             static_cast<int64_t>(reduce.getCompression()), bitsOf(ratio),
             communicatorOf(op, reduce.getGroup())});
        map.map(reduce.getResult(), r.front());
      } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
        SmallVector<Value> r = emitRuntimeCall(
            b, module, loc, "hetrt_all_gather", map.lookup(gather.getInput()), gather.getType(),
            {gather.getAxis(), communicatorOf(op, gather.getGroup()),
             gather.getByShare() ? 1 : 0});
        map.map(gather.getResult(), r.front());
      } else if (auto shard = dyn_cast<ShardOp>(op)) {
        SmallVector<Value> r = emitRuntimeCall(
            b, module, loc, "hetrt_shard", map.lookup(shard.getInput()), shard.getType(),
            {shard.getAxis(), communicatorOf(op, shard.getGroup())});
        map.map(shard.getResult(), r.front());
      } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
        SmallVector<Value> r = emitRuntimeCall(
            b, module, loc, "hetrt_reduce_scatter", map.lookup(scatter.getInput()),
            scatter.getType(),
            {static_cast<int64_t>(scatter.getReduction()), scatter.getAxis(),
             communicatorOf(op, scatter.getGroup()), scatter.getByShare() ? 1 : 0});
        map.map(scatter.getResult(), r.front());
      } else if (isa<MoEToExpertsOp, MoEFromExpertsOp>(op)) {
        // Words: communicator, members, then each member's experts.
        auto toExperts = dyn_cast<MoEToExpertsOp>(op);
        auto fromExperts = dyn_cast<MoEFromExpertsOp>(op);
        SymbolRefAttr group = toExperts ? toExperts.getGroupAttr() : fromExperts.getGroupAttr();
        ArrayRef<int64_t> experts = toExperts ? toExperts.getExperts() : fromExperts.getExperts();
        SmallVector<int64_t> words{communicatorOf(op, group), int64_t(experts.size())};
        words.append(experts.begin(), experts.end());
        SmallVector<Value> operands{map.lookup(op->getOperand(0)), map.lookup(op->getOperand(1))};
        SmallVector<Value> r =
            emitRuntimeCall(b, module, loc, toExperts ? "hetrt_moe_to_experts" : "hetrt_moe_from_experts",
                            operands, op->getResultTypes(), words);
        for (auto [from, to] : llvm::zip(op->getResults(), r))
          map.map(from, to);
      } else if (isa<BroadcastOp, AllToAllOp>(op)) {
        return op->emitError("convert-het-to-runtime: ")
               << op->getName() << " inside a stage is not supported by the pipeline runtime";
      } else {
        Operation *clone = b.clone(*op, map);
        clone->removeAttr(HetDialect::getBackwardAttrName());
      }
    }
    // Results: values later phases read, then the stage results made here.
    SmallVector<Value> results;
    SmallVector<std::string> outputNames;
    for (Operation *op : ops)
      for (Value result : op->getResults())
        if (boundaryName.count(result)) {
          results.push_back(map.lookup(result));
          outputNames.push_back(boundaryName.lookup(result));
        }
    for (auto &[value, name] : yielded[p]) {
      results.push_back(valueOf(value));
      outputNames.push_back(name);
    }
    b.create<func::ReturnOp>(stage.getLoc(), results);
    function.setType(FunctionType::get(ctx, entry->getArgumentTypes(), ValueRange(results).getTypes()));
    if (!kernels.gpuTarget.empty()) {
      // Kernels cannot call the host's: every op generated, but for the
      // vendor libraries' calls (cuDNN) between kernels.
      function->setAttr(HetDialect::getKernelLibraryAttrName(),
                        b.getStringAttr(kernels.gpuKernels));
      function->setAttr(kGpuTargetAttr, b.getStringAttr(kernels.gpuTarget));
    } else if (kernels.library != "default") {
      function->setAttr(HetDialect::getKernelLibraryAttrName(), b.getStringAttr(kernels.library));
    }

    PipelineDescription::Function described;
    described.phase = phaseNames[p];
    described.symbol = functionName;
    described.receives = llvm::count_if(ops, [](Operation *op) { return isa<RecvOp>(op); });
    for (auto [name, arg] : llvm::zip(inputNames, entry->getArguments())) {
      auto type = describeTensorType(stage, arg.getType());
      if (failed(type))
        return failure();
      described.inputs.push_back(name + " " + *type);
    }
    for (auto [name, value] : llvm::zip(outputNames, results)) {
      auto type = describeTensorType(stage, value.getType());
      if (failed(type))
        return failure();
      described.outputs.push_back(name + " " + *type);
    }
    variant.functions.push_back(std::move(described));
  }
  return success();
}

std::string sanitized(StringRef text) {
  std::string out;
  for (char c : text)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

} // namespace

FailureOr<PipelineDescription> mlir::het::lowerPipelineStages(ModuleOp module, int64_t samples,
                                                              const GpuStageOptions &gpu) {
  SmallVector<StageOp> stages(module.getOps<StageOp>());
  SmallVector<ClusterOp> clusters(module.getOps<ClusterOp>());
  if (stages.empty() || clusters.size() != 1)
    return module.emitError("convert-het-to-runtime needs one het.cluster and its het.stage ops "
                            "(run het-partition and het-pipeline-schedule first)");
  for (StageOp stage : stages)
    widenLowPrecisionCommunication(stage);
  PipelineDescription d;
  std::map<std::string, int> stageIndex;
  for (auto [j, stage] : llvm::enumerate(stages))
    stageIndex[stage.getSymName().str()] = static_cast<int>(j);
  auto microBatches =
      stages.front()->getAttrOfType<IntegerAttr>(HetDialect::getMicroBatchesAttrName());
  d.microBatches = microBatches ? microBatches.getInt() : 1;
  // The device groups in the cluster's order: het-run --cluster numbers
  // ranks group by group in this order.
  for (auto group : clusters.front().getBodyBlock().getOps<DeviceGroupOp>())
    d.groups.push_back({group.getSymName().str(), group.getCount()});
  bool sum = false;
  module.walk([&](AllReduceOp reduce) {
    sum |= feedsUpdate(reduce) && communicatorOf(reduce, reduce.getGroup()) == 0 &&
           reduce.getReduction() == ReductionKind::Sum;
  });
  // Expert parallelism needs weighted losses (het-partition checks it).
  module.walk([&](MoEToExpertsOp) { sum = true; });
  // Sharded optimizer state reduce-scatters the gradients instead.
  module.walk([&](ReduceScatterOp scatter) {
    sum |= scatter.getByShare() && scatter.getReduction() == ReductionKind::Sum;
  });
  d.lossCombine = sum ? "sum" : "avg";
  for (auto tied : module.getOps<TiedGroupOp>()) {
    std::vector<int64_t> members;
    for (Attribute name : tied.getStages()) {
      auto it = stageIndex.find(cast<FlatSymbolRefAttr>(name).getValue().str());
      if (it == stageIndex.end())
        return tied.emitError("convert-het-to-runtime: tied group @")
               << tied.getSymName() << " names unknown stage " << name;
      members.push_back(it->second);
    }
    d.tiedGroups.push_back(std::move(members));
  }
  // The global batch, where the stages say their shares.
  d.globalBatch = stages.front().getMicroBatchSamples() * d.microBatches;

  for (auto [j, stage] : llvm::enumerate(stages)) {
    auto order = stage->getAttrOfType<ArrayAttr>(HetDialect::getScheduleAttrName());
    if (!order || !microBatches)
      return stage.emitError("convert-het-to-runtime: stage '")
             << stage.getSymName() << "' has no schedule (run het-pipeline-schedule first)";
    PipelineDescription::Stage described;
    described.name = stage.getSymName().str();
    described.layerBegin = stage.getLayerBegin();
    described.layerEnd = stage.getLayerEnd();
    described.tensorParallel = stage.getTensorParallel();
    for (Attribute entry : order)
      described.order.push_back(cast<StringAttr>(entry).getValue().str());
    // Variants: one per distinct (share, kernels, format) of its replicas.
    // A module built for one format of a stage whose replicas differ
    // (het.built_format) lowers only the replicas of that format.
    // With expert parallelism each replica (a group of one) holds its own
    // experts and has its own code: the member is part of the key; a
    // module built for one member lowers only its group (het.built_member).
    std::map<std::tuple<int64_t, std::string, int64_t>, KernelChoice> keys;
    auto formats = stage->getAttrOfType<ArrayAttr>(kReplicaFormatsAttrName);
    auto built = stage->getAttrOfType<StringAttr>(kBuiltFormatAttrName);
    auto experts = stage->getAttrOfType<DenseI64ArrayAttr>(kReplicaExpertsAttrName);
    auto builtMember = stage->getAttrOfType<IntegerAttr>(kBuiltMemberAttrName);
    if (experts && experts.size() != int64_t(stage.getReplicaGroupList().size()))
      return stage.emitError("convert-het-to-runtime: ")
             << kReplicaExpertsAttrName << " names " << experts.size() << " counts for "
             << stage.getReplicaGroupList().size() << " replica groups";
    if (formats && formats.size() != stage.getReplicaGroupList().size())
      return stage.emitError("convert-het-to-runtime: ")
             << kReplicaFormatsAttrName << " names " << formats.size()
             << " formats for " << stage.getReplicaGroupList().size() << " replica groups";
    for (auto [i, replicas] : llvm::enumerate(stage.getReplicaGroupList())) {
      auto group =
          SymbolTable::lookupNearestSymbolFrom<DeviceGroupOp>(stage, replicas.getGroup());
      if (!group)
        return stage.emitError("convert-het-to-runtime: unknown device group ")
               << replicas.getGroup();
      FailureOr<KernelChoice> kernels = kernelsFor(stage, group, gpu);
      if (failed(kernels))
        return failure();
      if (formats)
        kernels->format = cast<StringAttr>(formats[i]).getValue().str();
      int64_t member = experts ? int64_t(i) : -1;
      keys.insert({{replicas.getSamples(), kernels->key(), member}, *kernels});
      PipelineDescription::Replicas r;
      r.group = group.getSymName().str();
      r.vendor = stringifyDeviceVendor(group.getKind().getVendor()).str();
      r.arch = group.getKind().getArch().str();
      r.library = kernels->library;
      r.key = kernels->key();
      r.count = replicas.getReplicas();
      r.samples = replicas.getSamples();
      r.experts = experts ? experts[i] : 0;
      r.member = member;
      described.replicas.push_back(r);
    }
    bool single = keys.size() == 1;
    auto variantKey = [&](int64_t samples, const std::string &key, int64_t member) {
      if (single)
        return std::string("-");
      std::string text = llvm::formatv("{0}_{1}", samples, key).str();
      return member >= 0 ? text + "_m" + std::to_string(member) : text;
    };
    for (PipelineDescription::Replicas &r : described.replicas)
      r.variant = variantKey(r.samples, r.key, r.member);

    // What it sends, at this module's shapes.
    for (auto send : stage.getBodyBlock().getOps<SendOp>()) {
      auto type = describeTensorType(stage, send.getValue().getType());
      if (failed(type))
        return failure();
      PipelineDescription::Channel channel;
      channel.from = static_cast<int64_t>(j);
      channel.to = stageIndex[send.getTarget().str()];
      channel.channel = send.getChannel();
      channel.backward = send->hasAttr(HetDialect::getBackwardAttrName());
      channel.type = *type;
      d.channels.push_back(channel);
    }
    StageLowering lowering;
    lowering.module = module;
    lowering.stage = stage;
    lowering.stageIndex = stageIndex;
    for (const auto &[key, kernels] : keys) {
      auto [share, kernelKey, member] = key;
      if (samples > 0 && share != samples)
        continue;
      if (built && built.getValue() != kernels.format)
        continue;
      if (builtMember && builtMember.getInt() != member)
        continue;
      PipelineDescription::Variant variant;
      variant.key = variantKey(share, kernelKey, member);
      std::string prefix =
          single ? described.name : described.name + "_" + sanitized(variant.key);
      if (failed(lowering.lower(prefix, kernels, variant)))
        return failure();
      described.variants.push_back(std::move(variant));
    }
    d.stages.push_back(std::move(described));
  }
  // Only the stage functions remain (the forward model kept for inference
  // and the cluster description have served their purpose).
  std::set<std::string> entries;
  for (const auto &stage : d.stages)
    for (const auto &variant : stage.variants)
      for (const auto &function : variant.functions)
        entries.insert(function.symbol);
  for (StageOp stage : stages)
    stage.erase();
  clusters.front().erase();
  for (auto tied : llvm::make_early_inc_range(module.getOps<TiedGroupOp>()))
    tied.erase();
  for (auto function : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (!function.isExternal() && !entries.count(function.getName().str()))
      function.erase();
  SmallVector<Attribute> names;
  for (const std::string &name : entries)
    names.push_back(StringAttr::get(module.getContext(), name));
  module->setAttr("hetrt.entries", ArrayAttr::get(module.getContext(), names));
  return d;
}

namespace {

struct ConvertHetToRuntimePass
    : public PassWrapper<ConvertHetToRuntimePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertHetToRuntimePass)

  StringRef getArgument() const override { return "convert-het-to-runtime"; }
  StringRef getDescription() const override {
    return "Turn het.stage into per-stage forward/backward/update functions and "
           "het.send/recv and collectives into libhetrt calls (after het-partition and "
           "het-pipeline-schedule)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registerCodegenDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto signature = module->getAttrOfType<StringAttr>("hetrt.step_signature");
    if (!signature) {
      module.emitError("convert-het-to-runtime needs the module attribute "
                       "hetrt.step_signature (het-compile --cluster sets it)");
      return signalPassFailure();
    }
    FailureOr<PipelineDescription> description = lowerPipelineStages(module, /*samples=*/0);
    if (failed(description))
      return signalPassFailure();
    // The planner's prediction, printed by the runtime next to the measured
    // iteration time.
    if (auto predicted = module->getAttrOfType<FloatAttr>("hetrt.predicted_iteration_s"))
      description->predictedSeconds = predicted.getValueAsDouble();
    module->setAttr("hetrt.model_info",
                    StringAttr::get(&getContext(), description->text(signature.getValue().str())));
    module->removeAttr("hetrt.step_signature");
    module->removeAttr("hetrt.predicted_iteration_s");
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createConvertHetToRuntimePass() {
  return std::make_unique<ConvertHetToRuntimePass>();
}

namespace mlir::het {
void registerConvertHetToRuntimePass() { PassRegistration<ConvertHetToRuntimePass>(); }
} // namespace mlir::het

std::string PipelineDescription::text(const std::string &signature) const {
  std::string info = "het-model 3\n" + signature;
  llvm::raw_string_ostream os(info);
  os << "pipeline " << stages.size() << ' ' << microBatches << ' ' << globalBatch << ' '
     << lossCombine << '\n';
  for (const std::string &name : batched)
    os << "batched " << name << '\n';
  for (const Group &g : groups)
    os << "group " << g.name << ' ' << g.count << '\n';
  if (predictedSeconds > 0)
    os << "predicted " << llvm::formatv("{0:e6}", predictedSeconds) << '\n';
  if (!planKey.empty())
    os << "plan_key " << planKey << '\n';
  for (size_t j = 0; j < stages.size(); ++j) {
    const Stage &s = stages[j];
    os << "stage " << j << ' ' << s.name << ' ' << s.layerBegin << ' ' << s.layerEnd << ' '
       << s.tensorParallel << ' ' << s.replicas.size() << '\n';
    for (const Replicas &r : s.replicas)
      os << "replicas " << j << ' ' << r.group << ' ' << r.vendor << ' ' << r.arch << ' '
         << r.library << ' ' << r.count << ' ' << r.samples << ' ' << r.variant << ' '
         << r.experts << '\n';
    os << "order " << j;
    for (const std::string &entry : s.order)
      os << ' ' << entry;
    os << '\n';
    for (const Variant &v : s.variants)
      for (const Function &f : v.functions) {
        os << "function " << j << ' ' << v.key << ' ' << f.phase << ' ' << f.symbol << ' '
           << f.inputs.size() << ' ' << f.outputs.size() << ' ' << f.receives << '\n';
        for (const std::string &in : f.inputs)
          os << "in " << in << '\n';
        for (const std::string &out : f.outputs)
          os << "out " << out << '\n';
      }
  }
  for (const Channel &c : channels)
    os << "channel " << c.from << ' ' << c.to << ' ' << c.channel << ' '
       << (c.backward ? "backward" : "forward") << ' ' << c.rowsPerSample << '\n';
  for (const Shard &s : shards)
    os << "shard " << s.name << ' ' << s.axis << ' ' << s.parts << '\n';
  for (const std::string &name : shareSharded)
    os << "share_shard " << name << '\n';
  for (const std::string &name : expertSharded)
    os << "expert_shard " << name << '\n';
  for (size_t k = 0; k < tiedGroups.size(); ++k) {
    os << "tied " << k;
    for (int64_t stage : tiedGroups[k])
      os << ' ' << stage;
    os << '\n';
  }
  return info;
}
