//===- ParallelLoopsToRuntime.cpp - generated loops on several threads ----===//
//
// oneDNN runs on the executable's --threads; generated code ran on one, so
// on two threads the second core spun in OpenMP while the first computed
// softmax, layer norm, GELU and Adam (over 40% of a GPT step's time). Here
// the outermost parallel loop of each large enough generated loop nest
// becomes a call
//
//   hetrt_parallel_for(iterations, @task, context)
//
// which runs `task(begin, end, context)` on oneDNN's own OpenMP threads
// (lib/Runtime/ParallelFor.cpp), each thread a contiguous share of the
// loop's first dimension. Two passes:
//
// - het-parallel-loops-to-runtime (buffers, scf.parallel from
//   convert-linalg-to-parallel-loops): the loop nest moves into a private
//   function over [begin, end) of its first dimension; the values it uses
//   from outside (buffers, scalars) are written to a table on the stack
//   whose address is the context; view ops (subviews, reshapes) and
//   constants it uses are recomputed inside instead. The task itself is
//   declared, to be defined once the module is in the LLVM dialect.
// - het-emit-parallel-tasks (LLVM dialect): the task's body reads the
//   table back, each value as the type the loop function takes (buffers are
//   bare pointers by then) and calls it.
//
// Only parallel dimensions are split, so every element is computed by one
// thread exactly as before: results do not depend on the thread count.
// Reductions stay inside (linalg lowers them to sequential loops).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace {

constexpr StringLiteral kTaskAttr = "hetrt.parallel_task";
constexpr StringLiteral kRuntimeFunction = "hetrt_parallel_for";

/// Below this many innermost iterations a loop nest stays on one thread:
/// starting the threads costs a few microseconds.
constexpr int64_t kMinIterations = 1 << 15;

/// Innermost iterations of the loops in `block` (1 for straight-line code;
/// a loop with bounds unknown here counts once).
int64_t iterationsIn(Block &block) {
  int64_t total = 1;
  for (Operation &op : block) {
    int64_t trips = 1;
    Block *body = nullptr;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      trips = constantTripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())
                  .value_or(1);
      body = loop.getBody();
    } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      for (auto [l, u, s] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
        trips *= constantTripCount(l, u, s).value_or(1);
      body = loop.getBody();
    }
    if (body)
      total = std::max(total, trips * iterationsIn(*body));
  }
  return total;
}

/// Ops recomputed inside the task instead of passed: constants and views.
bool isRecomputed(Operation *op) {
  return op && (op->hasTrait<OpTrait::ConstantLike>() ||
                isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
                    memref::ReinterpretCastOp, memref::CastOp>(op));
}

/// Values that can travel through the table as one 64-bit word.
bool isPassable(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return memref.hasStaticShape() && memref.getLayout().isIdentity();
  if (isa<IndexType>(type))
    return true;
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth() <= 64;
  return type.isF32() || type.isF64();
}

/// The loop's captured values (passed) and the ops that compute the rest
/// of what it uses (recomputed, in the order they were defined); false
/// when something it uses cannot travel.
bool collectUses(scf::ParallelOp loop, SetVector<Value> &passed,
                 SmallVectorImpl<Operation *> &recomputed) {
  SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  for (Value operand : loop->getOperands())
    used.insert(operand);
  SmallVector<Value> worklist(used.begin(), used.end());
  SetVector<Operation *> views;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (isRecomputed(def)) {
      if (views.insert(def))
        worklist.append(def->operand_begin(), def->operand_end());
      continue;
    }
    if (!isPassable(value.getType()))
      return false;
    passed.insert(value);
  }
  recomputed.assign(views.begin(), views.end());
  if (!llvm::all_of(recomputed, [&](Operation *op) { return op->getBlock() == loop->getBlock(); }))
    return false;
  llvm::sort(recomputed, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return true;
}

/// A value as the 64-bit word stored in the table.
Value toWord(OpBuilder &b, Location loc, Value value) {
  Type i64 = b.getI64Type();
  Type type = value.getType();
  if (isa<MemRefType>(type)) {
    Value address = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, value);
    return b.create<arith::IndexCastOp>(loc, i64, address);
  }
  if (isa<IndexType>(type))
    return b.create<arith::IndexCastOp>(loc, i64, value);
  if (type.isF32())
    value = b.create<arith::BitcastOp>(loc, b.getI32Type(), value);
  else if (type.isF64())
    return b.create<arith::BitcastOp>(loc, i64, value);
  if (value.getType() == i64)
    return value;
  return b.create<arith::ExtUIOp>(loc, i64, value);
}

struct ParallelLoopsToRuntimePass
    : public PassWrapper<ParallelLoopsToRuntimePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ParallelLoopsToRuntimePass)

  StringRef getArgument() const override { return "het-parallel-loops-to-runtime"; }
  StringRef getDescription() const override {
    return "Run the outermost parallel loop of large generated loop nests through "
           "hetrt_parallel_for on the executable's threads";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, func::FuncDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    unsigned outlined = 0;
    for (func::FuncOp function : functions) {
      if (function.isExternal())
        continue;
      SmallVector<scf::ParallelOp> loops;
      for (Block &block : function.getBody())
        for (auto loop : block.getOps<scf::ParallelOp>())
          loops.push_back(loop);
      unsigned index = 0;
      for (scf::ParallelOp loop : loops)
        if (outline(module, symbols, function, loop, index))
          ++index, ++outlined;
    }
    if (outlined)
      module->setAttr("hetrt.parallel_loops",
                      IntegerAttr::get(IntegerType::get(&getContext(), 64), outlined));
  }

  bool outline(ModuleOp module, SymbolTable &symbols, func::FuncOp parent, scf::ParallelOp loop,
               unsigned index) {
    if (loop.getNumResults() != 0)
      return false;
    std::optional<int64_t> trips =
        constantTripCount(loop.getLowerBound()[0], loop.getUpperBound()[0], loop.getStep()[0]);
    int64_t innermost = 1;
    for (auto [l, u, s] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
      innermost *= constantTripCount(l, u, s).value_or(1);
    innermost *= iterationsIn(*loop.getBody());
    if (!trips || *trips < 2 || innermost < kMinIterations)
      return false;
    // A call in the loop could be anything (the runtime's kernels are not
    // all thread-safe); only plain generated code is split.
    if (loop.getBody()->walk([](func::CallOp) { return WalkResult::interrupt(); }).wasInterrupted())
      return false;
    SetVector<Value> passed;
    SmallVector<Operation *> recomputed;
    if (!collectUses(loop, passed, recomputed))
      return false;

    MLIRContext *context = module.getContext();
    Location loc = loop.getLoc();
    OpBuilder b(context);
    Type i64 = b.getI64Type();
    auto taskType = b.getFunctionType({i64, i64, i64}, {});

    // The loop function: [begin, end) of the first dimension.
    std::string name = llvm::formatv("{0}_loop{1}", parent.getSymName(), index);
    SmallVector<Type> argumentTypes{b.getIndexType(), b.getIndexType()};
    for (Value value : passed)
      argumentTypes.push_back(value.getType());
    b.setInsertionPoint(parent);
    auto body = b.create<func::FuncOp>(loc, name, b.getFunctionType(argumentTypes, {}));
    body.setPrivate();
    symbols.insert(body);
    Block *entry = body.addEntryBlock();
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(passed, entry->getArguments().drop_front(2)))
      mapping.map(value, argument);
    b.setInsertionPointToStart(entry);
    for (Operation *op : recomputed)
      b.clone(*op, mapping);
    auto copy = cast<scf::ParallelOp>(b.clone(*loop, mapping));
    // Iterations [begin, end) of the first dimension start at
    // lower + begin * step.
    Value lower = copy.getLowerBound()[0], step = copy.getStep()[0];
    auto bound = [&](Value iteration) {
      Value offset = b.create<arith::MulIOp>(loc, iteration, step);
      return b.create<arith::AddIOp>(loc, lower, offset).getResult();
    };
    Value begin = bound(entry->getArgument(0)), end = bound(entry->getArgument(1));
    copy->setOperand(0, begin);
    copy->setOperand(copy.getNumLoops(), end);
    copy->moveAfter(end.getDefiningOp());
    b.setInsertionPointToEnd(entry);
    b.create<func::ReturnOp>(loc);

    // The task, defined by het-emit-parallel-tasks.
    b.setInsertionPoint(parent);
    auto task = b.create<func::FuncOp>(loc, name + "_task", taskType);
    task.setPrivate();
    task->setAttr(kTaskAttr, FlatSymbolRefAttr::get(body));
    symbols.insert(task);
    if (!symbols.lookup(kRuntimeFunction)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(module.getBody());
      auto runtime = b.create<func::FuncOp>(loc, kRuntimeFunction,
                                            b.getFunctionType({i64, taskType, i64}, {}));
      runtime.setPrivate();
      symbols.insert(runtime);
    }

    // The call: the table of passed values, then the runtime.
    b.setInsertionPoint(loop);
    int64_t slots = std::max<int64_t>(1, passed.size());
    Value table = b.create<memref::AllocaOp>(loc, MemRefType::get({slots}, i64));
    for (auto [slot, value] : llvm::enumerate(passed)) {
      Value position = b.create<arith::ConstantIndexOp>(loc, slot);
      b.create<memref::StoreOp>(loc, toWord(b, loc, value), table, position);
    }
    Value tripsValue = b.create<arith::ConstantIntOp>(loc, *trips, 64);
    Value taskAddress = b.create<func::ConstantOp>(loc, taskType, FlatSymbolRefAttr::get(task));
    Value tableAddress = toWord(b, loc, table);
    b.create<func::CallOp>(loc, kRuntimeFunction, TypeRange{},
                           ValueRange{tripsValue, taskAddress, tableAddress});
    loop.erase();
    return true;
  }
};

/// `task(begin, end, context)`: reads the loop function's values from the
/// table at `context` and calls it.
struct EmitParallelTasksPass
    : public PassWrapper<EmitParallelTasksPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmitParallelTasksPass)

  StringRef getArgument() const override { return "het-emit-parallel-tasks"; }
  StringRef getDescription() const override {
    return "Define the tasks het-parallel-loops-to-runtime declared (LLVM dialect)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto i64 = IntegerType::get(context, 64);
    for (auto task : module.getOps<LLVM::LLVMFuncOp>()) {
      auto bodyRef = task->getAttrOfType<FlatSymbolRefAttr>(kTaskAttr);
      if (!bodyRef)
        continue;
      auto body = module.lookupSymbol<LLVM::LLVMFuncOp>(bodyRef.getValue());
      if (!body || !task.isExternal() || task.getNumArguments() != 3) {
        task.emitError("het-emit-parallel-tasks: no loop function @") << bodyRef.getValue();
        return signalPassFailure();
      }
      task->removeAttr(kTaskAttr);
      task.setLinkage(LLVM::Linkage::Internal);
      OpBuilder b(context);
      Block *entry = task.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Location loc = task.getLoc();
      Value table = b.create<LLVM::IntToPtrOp>(loc, ptr, entry->getArgument(2));
      SmallVector<Value> arguments{entry->getArgument(0), entry->getArgument(1)};
      ArrayRef<Type> parameters = body.getFunctionType().getParams();
      for (auto [slot, type] : llvm::enumerate(parameters.drop_front(2))) {
        Value address = b.create<LLVM::GEPOp>(loc, ptr, i64, table,
                                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(slot)});
        Value word = b.create<LLVM::LoadOp>(loc, i64, address);
        Value value;
        if (isa<LLVM::LLVMPointerType>(type)) {
          value = b.create<LLVM::IntToPtrOp>(loc, ptr, word);
        } else if (type == i64) {
          value = word;
        } else if (type.isF64()) {
          value = b.create<LLVM::BitcastOp>(loc, type, word);
        } else if (type.isF32()) {
          Value bits = b.create<LLVM::TruncOp>(loc, b.getI32Type(), word);
          value = b.create<LLVM::BitcastOp>(loc, type, bits);
        } else if (auto integer = dyn_cast<IntegerType>(type); integer && integer.getWidth() < 64) {
          value = b.create<LLVM::TruncOp>(loc, type, word);
        } else {
          body.emitError("het-emit-parallel-tasks: cannot pass a ") << type << " to a loop function";
          return signalPassFailure();
        }
        arguments.push_back(value);
      }
      b.create<LLVM::CallOp>(loc, body, arguments);
      b.create<LLVM::ReturnOp>(loc, ValueRange{});
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createParallelLoopsToRuntimePass() {
  return std::make_unique<ParallelLoopsToRuntimePass>();
}

std::unique_ptr<Pass> mlir::het::createEmitParallelTasksPass() {
  return std::make_unique<EmitParallelTasksPass>();
}

namespace mlir::het {
void registerParallelLoopsToRuntimePass() { PassRegistration<ParallelLoopsToRuntimePass>(); }
void registerEmitParallelTasksPass() { PassRegistration<EmitParallelTasksPass>(); }
} // namespace mlir::het
