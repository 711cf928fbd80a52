//===- LaunchToHostLoops.cpp - run mapped kernels on the host --------------===//
//
// Host emulation (het-compile --gpu-emulate): each gpu.launch of the mapped
// step becomes loops over its grid and its block, its body run once per
// (block, thread) with the ids as loop variables. The kernels are exactly
// those a GPU build serializes -- the same tiling, the same in-bounds
// checks, the same index arithmetic from block and thread ids -- run one
// thread after another. It is the correctness harness of the GPU lowering
// on machines without GPUs, not a fast path: the loops are sequential. The
// one cooperation emulated is a block-wide reduction at the top level of a
// kernel (het-gpu-block-reductions): every thread runs up to it, leaving its
// partial result in a buffer, the partials are combined in thread order,
// and every thread runs on with the result. Any other cooperation
// (barriers, shuffles, shared memory) is refused rather than emulated
// wrongly.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// The arith combination gpu.all_reduce `kind` stands for, on `type`.
std::optional<arith::AtomicRMWKind> combinationOf(gpu::AllReduceOperation kind, Type type) {
  using Kind = gpu::AllReduceOperation;
  using Rmw = arith::AtomicRMWKind;
  bool isFloat = isa<FloatType>(type);
  switch (kind) {
  case Kind::ADD:
    return isFloat ? Rmw::addf : Rmw::addi;
  case Kind::MUL:
    return isFloat ? Rmw::mulf : Rmw::muli;
  case Kind::MAXNUMF:
    return Rmw::maxnumf;
  case Kind::MINNUMF:
    return Rmw::minnumf;
  case Kind::MAXIMUMF:
    return Rmw::maximumf;
  case Kind::MINIMUMF:
    return Rmw::minimumf;
  case Kind::MAXSI:
    return Rmw::maxs;
  case Kind::MINSI:
    return Rmw::mins;
  case Kind::MAXUI:
    return Rmw::maxu;
  case Kind::MINUI:
    return Rmw::minu;
  case Kind::AND:
    return Rmw::andi;
  case Kind::OR:
    return Rmw::ori;
  default:
    return std::nullopt;
  }
}

/// Nested loops from 0 to each bound (outermost first); the builder is left
/// inside the innermost. Returns their induction variables.
SmallVector<Value> nestedLoops(OpBuilder &b, Location loc, ArrayRef<Value> bounds) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  SmallVector<Value> ivs;
  for (Value bound : bounds) {
    auto loop = b.create<scf::ForOp>(loc, zero, bound, one);
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  return ivs;
}

struct LaunchToHostLoopsPass
    : public PassWrapper<LaunchToHostLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LaunchToHostLoopsPass)
  StringRef getArgument() const override { return "het-gpu-launch-to-host-loops"; }
  StringRef getDescription() const override {
    return "Emulate each gpu.launch with loops over its blocks and threads";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<scf::SCFDialect, arith::ArithDialect, memref::MemRefDialect>();
  }

  /// Clones `ops` (of the launch body) with `map`; an operand made by an op
  /// of `earlier` (the body before a block reduction) is recomputed when
  /// that op is pure, else the kernel cannot be split there.
  LogicalResult cloneWithRecompute(OpBuilder &b, ArrayRef<Operation *> ops, IRMapping &map,
                                   const llvm::SmallPtrSetImpl<Operation *> &earlier) {
    std::function<LogicalResult(Value)> available = [&](Value value) -> LogicalResult {
      if (map.contains(value))
        return success();
      Operation *def = value.getDefiningOp();
      if (!def || !earlier.contains(def))
        return success(); // defined outside the kernel
      if (!isMemoryEffectFree(def) || def->getNumRegions() != 0)
        return def->emitError("het-gpu-launch-to-host-loops: a value computed before the "
                              "block reduction is used after it and cannot be recomputed");
      for (Value operand : def->getOperands())
        if (failed(available(operand)))
          return failure();
      b.clone(*def, map);
      return success();
    };
    for (Operation *op : ops) {
      LogicalResult ok = success();
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (failed(available(operand)))
            ok = failure();
      });
      if (failed(ok))
        return failure();
      b.clone(*op, map);
    }
    return success();
  }

  LogicalResult emulate(gpu::LaunchOp launch) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        launch.getDynamicSharedMemorySize())
      return launch.emitError("het-gpu-launch-to-host-loops: asynchronous launches and "
                              "dynamic shared memory are not emulated");
    Region &body = launch.getBody();
    if (!body.hasOneBlock())
      return launch.emitError("het-gpu-launch-to-host-loops: a kernel body of several blocks");
    // Threads may cooperate through one block-wide reduction at the top
    // level of the kernel (het-gpu-block-reductions): the threads run up to
    // it, the partials are combined, then the threads run on.
    gpu::AllReduceOp reduce;
    bool other = false;
    body.walk([&](Operation *op) {
      if (auto r = dyn_cast<gpu::AllReduceOp>(op)) {
        if (reduce || r->getBlock() != &body.front() || !r.getOp() || !r.getUniform())
          other = true;
        reduce = r;
      }
      other |= isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::SubgroupReduceOp>(op);
    });
    std::optional<arith::AtomicRMWKind> combination =
        reduce && reduce.getOp() ? combinationOf(*reduce.getOp(), reduce.getType()) : std::nullopt;
    if (other || (reduce && !combination))
      return launch.emitError("het-gpu-launch-to-host-loops: a kernel whose threads cooperate "
                              "other than by one uniform block-wide reduction at its top level "
                              "(barriers, shuffles) cannot run one thread at a time");
    arith::AtomicRMWKind combineKind = combination.value_or(arith::AtomicRMWKind::addf);

    OpBuilder b(launch);
    Location loc = launch.getLoc();
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    gpu::KernelDim3 blockIds = launch.getBlockIds(), threadIds = launch.getThreadIds();
    gpu::KernelDim3 gridSize = launch.getGridSize(), blockSize = launch.getBlockSize();
    IRMapping sizes;
    sizes.map(gridSize.x, grid.x);
    sizes.map(gridSize.y, grid.y);
    sizes.map(gridSize.z, grid.z);
    sizes.map(blockSize.x, block.x);
    sizes.map(blockSize.y, block.y);
    sizes.map(blockSize.z, block.z);
    // The partials of one block's threads, in thread order (emulation runs
    // before deallocation, which frees the buffer).
    Value partials;
    if (reduce) {
      Value threads =
          b.create<arith::MulIOp>(loc, b.create<arith::MulIOp>(loc, block.x, block.y), block.z);
      partials = b.create<memref::AllocOp>(
          loc, MemRefType::get({ShapedType::kDynamic}, reduce.getType()), ValueRange{threads});
    }
    // Blocks outside, threads inside, x innermost (as a GPU would number
    // them; the order does not matter to kernels without cooperation).
    OpBuilder loops = b;
    SmallVector<Value> blockIvs = nestedLoops(loops, loc, {grid.z, grid.y, grid.x});
    sizes.map(blockIds.z, blockIvs[0]);
    sizes.map(blockIds.y, blockIvs[1]);
    sizes.map(blockIds.x, blockIvs[2]);
    SmallVector<Operation *> before, rest;
    for (Operation &op : body.front().without_terminator()) {
      if (&op == reduce.getOperation())
        continue;
      (reduce && op.isBeforeInBlock(reduce) ? before : rest).push_back(&op);
    }
    llvm::SmallPtrSet<Operation *, 16> earlier(before.begin(), before.end());
    auto threadLoops = [&](IRMapping &map) {
      OpBuilder inner = loops;
      SmallVector<Value> ivs = nestedLoops(inner, loc, {block.z, block.y, block.x});
      map.map(threadIds.z, ivs[0]);
      map.map(threadIds.y, ivs[1]);
      map.map(threadIds.x, ivs[2]);
      return std::make_pair(inner, ivs);
    };
    if (reduce) {
      IRMapping map = sizes;
      auto [inner, ivs] = threadLoops(map);
      for (Operation *op : before)
        inner.clone(*op, map);
      Value linear = inner.create<arith::AddIOp>(
          loc,
          inner.create<arith::MulIOp>(
              loc,
              inner.create<arith::AddIOp>(loc, inner.create<arith::MulIOp>(loc, ivs[0], block.y),
                                          ivs[1]),
              block.x),
          ivs[2]);
      inner.create<memref::StoreOp>(loc, map.lookupOrDefault(reduce.getValue()), partials, linear);
      // Combined in thread order.
      Value zero = loops.create<arith::ConstantIndexOp>(loc, 0);
      Value one = loops.create<arith::ConstantIndexOp>(loc, 1);
      Value count = loops.create<memref::DimOp>(loc, partials, 0);
      Value identity = arith::getIdentityValue(combineKind, reduce.getType(), loops, loc);
      auto combine = loops.create<scf::ForOp>(loc, zero, count, one, ValueRange{identity});
      {
        OpBuilder c = OpBuilder::atBlockBegin(combine.getBody());
        Value partial = c.create<memref::LoadOp>(loc, partials, combine.getInductionVar());
        c.create<scf::YieldOp>(loc,
                               arith::getReductionOp(combineKind, c, loc,
                                                     combine.getRegionIterArgs().front(), partial));
      }
      loops.setInsertionPointAfter(combine);
      sizes.map(reduce.getResult(), combine.getResult(0));
    }
    {
      IRMapping map = sizes;
      auto [inner, ivs] = threadLoops(map);
      (void)ivs;
      if (failed(cloneWithRecompute(inner, rest, map, earlier)))
        return failure();
    }
    launch.erase();
    return success();
  }

  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch)))
        return signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createLaunchToHostLoopsPass() {
  return std::make_unique<LaunchToHostLoopsPass>();
}
