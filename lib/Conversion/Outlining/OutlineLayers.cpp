//===- OutlineLayers.cpp - one function per distinct layer computation ----===//
//
// A deep model repeats one block N times. Lowered as one function, LLVM
// optimises and emits all N copies, and its function passes grow faster
// than linearly with the function's size: a 12-block GPT took minutes. Here
// each maximal run of consecutive ops of one `het.layer` becomes a call to
// a private function holding them, and runs that are structurally
// identical -- the same ops, types and attributes once `het.layer` is set
// aside; parameters and activations are arguments -- share one function.
// N identical transformer blocks are then lowered, optimised and emitted
// once, and each function is small enough for the object cache and the
// parallel code generator (lib/Target) to work per function.
//
// The planner and partitioner have run by now (they read `het.layer` on
// every op); the call keeps the layer of the run it replaces, so the IR
// still says which layer each call computes.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "het/Dialect/Het/IR/HetDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// Small constants (scalars, short vectors) are cloned into the outlined
/// function, where they fold into the code; larger ones are passed.
constexpr int64_t kMaxClonedConstantElements = 64;

bool isClonableConstant(Operation *op) {
  if (!op || op->getNumOperands() != 0 || op->getNumResults() != 1 ||
      !op->hasTrait<OpTrait::ConstantLike>())
    return false;
  auto shaped = dyn_cast<ShapedType>(op->getResult(0).getType());
  return !shaped || (shaped.hasStaticShape() &&
                     shaped.getNumElements() <= kMaxClonedConstantElements);
}

std::optional<int64_t> layerOf(Operation *op) {
  if (auto layer = op->getAttrOfType<IntegerAttr>(HetDialect::getLayerAttrName()))
    return layer.getInt();
  return std::nullopt;
}

/// A run of consecutive ops of one layer in a function's body.
struct Run {
  int64_t layer;
  SmallVector<Operation *> ops;
};

/// The maximal runs of `body`: ops carrying `het.layer` (other than
/// constants) join the current run while the layer stays the same; any
/// other op (a runtime call of a pipeline stage, a terminator) ends it.
/// Constants neither join nor end a run: they stay where they are and are
/// cloned or passed where used.
SmallVector<Run> findRuns(Block &body) {
  SmallVector<Run> runs;
  Run *current = nullptr;
  for (Operation &op : body) {
    if (op.hasTrait<OpTrait::ConstantLike>() && op.getNumOperands() == 0)
      continue;
    std::optional<int64_t> layer = layerOf(&op);
    if (!layer || op.hasTrait<OpTrait::IsTerminator>() || isa<func::CallOp>(op)) {
      current = nullptr;
      continue;
    }
    if (!current || current->layer != *layer) {
      runs.push_back(Run{*layer, {}});
      current = &runs.back();
    }
    current->ops.push_back(&op);
  }
  return runs;
}

struct OutlineLayersPass
    : public PassWrapper<OutlineLayersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OutlineLayersPass)

  OutlineLayersPass() = default;
  OutlineLayersPass(const OutlineLayersPass &other) : PassWrapper(other) {}

  StringRef getArgument() const override { return "het-outline-layers"; }
  StringRef getDescription() const override {
    return "Outline each run of one het.layer's ops into a private function, one function "
           "per structurally distinct run (N identical blocks are compiled once)";
  }

  Option<unsigned> minOps{*this, "min-ops",
                          llvm::cl::desc("outline runs of at least this many ops"),
                          llvm::cl::init(1)};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // The structural text of every function made so far: identical runs,
    // in any function of the module, share the first one's function.
    llvm::StringMap<func::FuncOp> byStructure;
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      // A GPU stage's function keeps its loops: the GPU mapping works on
      // the function itself.
      if (!function.isExternal() && !function->hasAttr(kOutlinedAttr) &&
          !function->hasAttr(kGpuTargetAttr))
        functions.push_back(function);
    unsigned calls = 0;
    for (func::FuncOp function : functions) {
      if (!function.getBody().hasOneBlock())
        continue;
      for (Run &run : findRuns(function.getBody().front())) {
        if (run.ops.size() < minOps)
          continue;
        outline(module, symbols, function, run, byStructure);
        ++calls;
      }
    }
    module->setAttr("hetrt.outlined_functions",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), byStructure.size()));
    module->setAttr("hetrt.outlined_calls",
                    IntegerAttr::get(IntegerType::get(&getContext(), 64), calls));
  }

  static constexpr StringLiteral kOutlinedAttr = "hetrt.outlined";

  void outline(ModuleOp module, SymbolTable &symbols, func::FuncOp parent, Run &run,
               llvm::StringMap<func::FuncOp> &byStructure) {
    llvm::SmallPtrSet<Operation *, 32> inRun(run.ops.begin(), run.ops.end());
    Block *body = &parent.getBody().front();
    auto insideRun = [&](Value value) {
      Operation *owner = isa<BlockArgument>(value)
                             ? cast<BlockArgument>(value).getOwner()->getParentOp()
                             : value.getDefiningOp();
      Operation *top = owner ? body->findAncestorOpInBlock(*owner) : nullptr;
      return top && inRun.contains(top);
    };

    // Arguments in order of first use, small constants to clone, results
    // in op order: identical runs get identical signatures.
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Operation *> constants;
    for (Operation *op : run.ops)
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands()) {
          if (insideRun(operand))
            continue;
          if (isClonableConstant(operand.getDefiningOp()))
            constants.insert(operand.getDefiningOp());
          else
            inputs.insert(operand);
        }
      });
    SmallVector<Value> outputs;
    for (Operation *op : run.ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inRun.contains(body->findAncestorOpInBlock(*user));
            }))
          outputs.push_back(result);

    // The candidate function, named after its structure once built.
    OpBuilder builder(module.getContext());
    builder.setInsertionPoint(parent);
    SmallVector<Type> inputTypes, outputTypes;
    for (Value input : inputs)
      inputTypes.push_back(input.getType());
    for (Value output : outputs)
      outputTypes.push_back(output.getType());
    auto candidate = builder.create<func::FuncOp>(
        run.ops.front()->getLoc(), "het_outlined",
        builder.getFunctionType(inputTypes, outputTypes));
    candidate.setPrivate();
    candidate->setAttr(kOutlinedAttr, builder.getUnitAttr());
    if (Attribute library = parent->getAttr("het.kernel_library"))
      candidate->setAttr("het.kernel_library", library);
    Block *entry = candidate.addEntryBlock();
    IRMapping mapping;
    for (auto [input, argument] : llvm::zip(inputs, entry->getArguments()))
      mapping.map(input, argument);
    builder.setInsertionPointToStart(entry);
    for (Operation *constant : constants)
      builder.clone(*constant, mapping);
    for (Operation *op : run.ops) {
      Operation *copy = builder.clone(*op, mapping);
      copy->removeAttr(HetDialect::getLayerAttrName());
    }
    SmallVector<Value> returned;
    for (Value output : outputs)
      returned.push_back(mapping.lookup(output));
    builder.create<func::ReturnOp>(run.ops.back()->getLoc(), returned);

    std::string structure;
    {
      llvm::raw_string_ostream os(structure);
      candidate.print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    }
    func::FuncOp callee;
    auto known = byStructure.find(structure);
    if (known != byStructure.end()) {
      callee = known->second;
      candidate.erase();
    } else {
      // Named by content, so the same computation keeps its name (and its
      // object-cache entry) when other layers of the model change.
      std::string name = llvm::formatv("het_outlined_{0:x-}", llvm::xxh3_64bits(structure));
      candidate.setSymName(name);
      symbols.insert(candidate); // renames on the (unlikely) clash of two hashes
      byStructure[structure] = candidate;
      callee = candidate;
    }

    builder.setInsertionPointAfter(run.ops.back());
    auto call = builder.create<func::CallOp>(run.ops.back()->getLoc(), callee,
                                             ValueRange(inputs.getArrayRef()));
    call->setAttr(HetDialect::getLayerAttrName(),
                  builder.getI64IntegerAttr(run.layer));
    for (auto [output, replacement] : llvm::zip(outputs, call.getResults()))
      output.replaceAllUsesWith(replacement);
    for (Operation *op : llvm::reverse(run.ops))
      op->erase();
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createOutlineLayersPass() {
  return std::make_unique<OutlineLayersPass>();
}

namespace mlir::het {
void registerOutlineLayersPass() { PassRegistration<OutlineLayersPass>(); }
} // namespace mlir::het
