//===- ConvertHetToRuntime.cpp - pipeline stages to functions and calls ---===//
//
// Input: the output of het-partition and het-pipeline-schedule (a
// het.cluster and one het.stage per pipeline stage). Output: for each stage
// three functions the runtime calls,
//
//   @<stage>_forward   one micro-batch's forward pass: data and parameters
//                      in; the loss (last stage) and the activations the
//                      backward pass needs ("saved.<k>") out;
//   @<stage>_backward  one micro-batch's backward pass: saved activations
//                      and parameters in; the gradients ("grad.<k>") out;
//   @<stage>_update    once per step: the gradients, summed over the
//                      micro-batches and divided by their count by the
//                      runtime, are all-reduced over the stage's replicas and
//                      applied; new parameters and optimizer state out,
//
// with het.send / het.recv / het.all_reduce turned into calls
//
//   hetrt_send(meta, buffers)        meta words: peer stage, channel, bytes
//                                    per element
//   hetrt_recv(meta, buffers)        meta words: source stage, channel, bytes
//                                    per element
//   hetrt_all_reduce(meta, buffers)  meta words: reduction, algorithm,
//                                    compression, top-k ratio (bits)
//
// in the KernelCall convention of the compute kernels. Which replica of the
// peer stage a rank talks to, and which hetccl communicator an all-reduce
// uses, is the runtime's business (lib/Runtime/Pipeline*.cpp): the IR says
// stages, the runtime maps them to ranks.
//
// Within a phase the receives move to the start, ordered by source and
// channel: channels number a stage pair's tensors in send order, so both
// sides then agree on the order of the messages between them, and the
// runtime can post a phase's receives together with the sends still queued
// from the previous phase (no deadlock between neighbours that both send).
//
// Each function carries het.kernel_library from its stage's device kind
// (cpu/onednn -> dnnl, cpu/mlir -> mlir, cpu/x86_64 -> the compile-wide
// default), so convert-het-to-linalg lowers each stage for its device.
//
//===----------------------------------------------------------------------===//

#include "../HetToLinalg/Lowering.h"
#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/IR/HetDialect.h"
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

/// The CPU kernel library a device kind compiles with; empty: the
/// compile-wide default.
FailureOr<std::string> libraryFor(StageOp stage, DeviceKindAttr kind) {
  if (kind.getVendor() != DeviceVendor::CPU)
    return stage.emitError() << "convert-het-to-runtime: stage '" << stage.getSymName()
                             << "' is placed on " << kind
                             << "; this build generates code for CPU device kinds only "
                                "(cpu/onednn, cpu/mlir, cpu/x86_64)";
  StringRef arch = kind.getArch();
  if (arch == "onednn")
    return std::string("dnnl");
  if (arch == "mlir")
    return std::string("mlir");
  if (arch == "reference")
    return std::string("reference");
  return std::string();
}

struct StageLowering {
  ModuleOp module;
  StageOp stage;
  std::map<std::string, int> stageIndex;
  std::string library;
  std::string info; // the stage's part of hetrt.model_info

  LogicalResult run(int index);

private:
  DenseMap<Operation *, Phase> phase;
  void assignPhases();
};

void StageLowering::assignPhases() {
  Block &body = stage.getBodyBlock();
  for (Operation &op : body.without_terminator()) {
    Phase p = Forward;
    if (op.getNumOperands() == 0 && op.hasTrait<OpTrait::ConstantLike>())
      p = Anywhere; // copied into each function that uses it
    else if (isa<SGDOp, AdamOp, AllReduceOp>(op))
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
        isa<SGDOp, AdamOp, AllReduceOp, SendOp, RecvOp>(op) ||
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

LogicalResult StageLowering::run(int index) {
  MLIRContext *ctx = module.getContext();
  assignPhases();
  auto argNames = stage->getAttrOfType<ArrayAttr>(HetDialect::getArgNamesAttrName());
  auto resultNames = stage->getAttrOfType<ArrayAttr>(HetDialect::getResultNamesAttrName());
  auto order = stage->getAttrOfType<ArrayAttr>(HetDialect::getScheduleAttrName());
  auto microBatches = stage->getAttrOfType<IntegerAttr>(HetDialect::getMicroBatchesAttrName());
  Block &body = stage.getBodyBlock();
  YieldOp yield = stage.getYield();
  if (!argNames || argNames.size() != body.getNumArguments() || !resultNames ||
      resultNames.size() != yield.getNumOperands())
    return stage.emitError("convert-het-to-runtime: stage '")
           << stage.getSymName()
           << "' lacks het.arg_names/het.result_names (made by het-partition)";
  // A stage without parameters (pooling, the loss) has nothing to update;
  // one whose averaged gradients are its results (het-autodiff
  // optimizer=none) would leave training to someone else.
  bool updates = false, averages = false;
  stage.getBodyBlock().walk([&](Operation *op) {
    updates |= isa<SGDOp, AdamOp>(op);
    averages |= isa<AllReduceOp>(op);
  });
  if (!updates && averages)
    return stage.emitError("convert-het-to-runtime: stage '")
           << stage.getSymName()
           << "' returns its gradients instead of applying them; a pipelined step needs an "
              "optimizer in it "
              "(het-autodiff optimizer=sgd or adam)";
  if (!order || !microBatches)
    return stage.emitError("convert-het-to-runtime: stage '")
           << stage.getSymName() << "' has no schedule (run het-pipeline-schedule first)";

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

  std::string stageName = stage.getSymName().str();
  llvm::raw_string_ostream os(info);
  OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
  for (int p = Forward; p <= Update; ++p) {
    std::string functionName = stageName + "_" + phaseNames[p];
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
                             elementBytes(recv.getType())});
        map.map(recv.getResult(), r.front());
      } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
        double ratio = reduce.getTopkRatio() ? reduce.getTopkRatio()->convertToDouble() : 0.0;
        SmallVector<Value> r = emitRuntimeCall(
            b, module, loc, "hetrt_all_reduce", map.lookup(reduce.getInput()), reduce.getType(),
            {static_cast<int64_t>(reduce.getReduction()),
             static_cast<int64_t>(reduce.getAlgorithm()),
             static_cast<int64_t>(reduce.getCompression()), bitsOf(ratio)});
        map.map(reduce.getResult(), r.front());
      } else {
        Operation *copy = b.clone(*op, map);
        copy->removeAttr(HetDialect::getBackwardAttrName());
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
    if (!library.empty())
      function->setAttr(HetDialect::getKernelLibraryAttrName(), b.getStringAttr(library));

    size_t receives = llvm::count_if(ops, [](Operation *op) { return isa<RecvOp>(op); });
    os << "function " << index << ' ' << phaseNames[p] << ' ' << functionName << ' '
       << entry->getNumArguments() << ' ' << results.size() << ' ' << receives << '\n';
    for (auto [name, arg] : llvm::zip(inputNames, entry->getArguments())) {
      auto type = describeTensorType(stage, arg.getType());
      if (failed(type))
        return failure();
      os << "in " << name << ' ' << *type << '\n';
    }
    for (auto [name, value] : llvm::zip(outputNames, results)) {
      auto type = describeTensorType(stage, value.getType());
      if (failed(type))
        return failure();
      os << "out " << name << ' ' << *type << '\n';
    }
  }
  return success();
}

struct ConvertHetToRuntimePass
    : public PassWrapper<ConvertHetToRuntimePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertHetToRuntimePass)

  StringRef getArgument() const override { return "convert-het-to-runtime"; }
  StringRef getDescription() const override {
    return "Turn het.stage into per-stage forward/backward/update functions and "
           "het.send/recv/all_reduce into libhetrt calls (after het-partition and "
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
    SmallVector<StageOp> stages(module.getOps<StageOp>());
    SmallVector<ClusterOp> clusters(module.getOps<ClusterOp>());
    if (stages.empty() || clusters.size() != 1) {
      module.emitError("convert-het-to-runtime needs one het.cluster and its het.stage ops "
                       "(run het-partition and het-pipeline-schedule first)");
      return signalPassFailure();
    }
    std::map<std::string, int> stageIndex;
    for (auto [j, stage] : llvm::enumerate(stages))
      stageIndex[stage.getSymName().str()] = static_cast<int>(j);

    std::string info = "het-model 2\n" + signature.getValue().str();
    llvm::raw_string_ostream os(info);
    auto microBatches =
        stages.front()->getAttrOfType<IntegerAttr>(HetDialect::getMicroBatchesAttrName());
    os << "pipeline " << stages.size() << ' ' << (microBatches ? microBatches.getInt() : 1)
       << '\n';
    // The device groups in the cluster's order: het-run --cluster numbers
    // ranks group by group in this order.
    for (auto group : clusters.front().getBodyBlock().getOps<DeviceGroupOp>())
      os << "group " << group.getSymName() << ' ' << group.getCount() << '\n';
    // The planner's prediction, printed by the runtime next to the measured
    // iteration time.
    if (auto predicted = module->getAttrOfType<FloatAttr>("hetrt.predicted_iteration_s"))
      os << "predicted " << llvm::formatv("{0:e6}", predicted.getValueAsDouble()) << '\n';
    SmallVector<Attribute> entries;
    for (auto [j, stage] : llvm::enumerate(stages)) {
      auto group = SymbolTable::lookupNearestSymbolFrom<DeviceGroupOp>(stage,
                                                                      stage.getDeviceGroup());
      if (!group) {
        stage.emitError("convert-het-to-runtime: unknown device group ") << stage.getDeviceGroup();
        return signalPassFailure();
      }
      FailureOr<std::string> library = libraryFor(stage, group.getKind());
      if (failed(library))
        return signalPassFailure();
      auto order = stage->getAttrOfType<ArrayAttr>(HetDialect::getScheduleAttrName());
      os << "stage " << j << ' ' << stage.getSymName() << ' ' << stage.getReplicas() << ' '
         << group.getSymName() << ' ' << stringifyDeviceVendor(group.getKind().getVendor())
         << ' ' << group.getKind().getArch() << ' '
         << (library->empty() ? "default" : library->c_str()) << ' ' << stage.getLayerBegin()
         << ' ' << stage.getLayerEnd() << '\n';
      os << "order " << j;
      if (order)
        for (Attribute entry : order)
          os << ' ' << cast<StringAttr>(entry).getValue();
      os << '\n';
      StageLowering lowering;
      lowering.module = module;
      lowering.stage = stage;
      lowering.stageIndex = stageIndex;
      lowering.library = *library;
      if (failed(lowering.run(static_cast<int>(j))))
        return signalPassFailure();
      os << lowering.info;
      for (const char *p : phaseNames)
        entries.push_back(StringAttr::get(&getContext(), (stage.getSymName() + "_" + p).str()));
    }
    // Only the stage functions remain (the forward model kept for inference
    // and the cluster description have served their purpose).
    for (StageOp stage : stages)
      stage.erase();
    clusters.front().erase();
    for (auto function : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (!function.isExternal() &&
          !llvm::is_contained(entries, StringAttr::get(&getContext(), function.getName())))
        function.erase();
    module->setAttr("hetrt.model_info", StringAttr::get(&getContext(), info));
    module->setAttr("hetrt.entries", ArrayAttr::get(&getContext(), entries));
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
