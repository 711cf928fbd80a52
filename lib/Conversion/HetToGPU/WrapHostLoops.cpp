//===- WrapHostLoops.cpp - loop nests left on the host become kernels ------===//
//
// convert-parallel-loops-to-gpu maps the parallel dimensions of each loop
// nest onto blocks and threads. A nest with no parallel dimension (a sum to
// a scalar, the cross-entropy's mean) or one whose scf.parallel reduces a
// value stays a host loop, which on a GPU would read device memory from the
// host. Each such nest is moved into a one-block, one-thread gpu.launch:
// correct everywhere, slow where the nest is large (block reductions are the
// follow-up, docs/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

bool accessesMemory(Operation *op) {
  return isa<memref::LoadOp, memref::StoreOp, memref::CopyOp>(op);
}

/// Whether `loop` reads or writes memory outside the kernels it launches.
bool touchesMemory(Operation *loop) {
  bool found = false;
  loop->walk([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    found |= accessesMemory(op);
    return WalkResult::advance();
  });
  return found;
}

bool launchesKernels(Operation *loop) {
  bool found = false;
  loop->walk([&](gpu::LaunchOp) { found = true; });
  return found;
}

/// Work that reads or writes memory and must run on the device: an access,
/// or a loop nest with accesses and no kernels of its own.
bool isDeviceWork(Operation *op) {
  if (accessesMemory(op))
    return true;
  return isa<scf::ForOp, scf::ParallelOp>(op) && !launchesKernels(op) && touchesMemory(op);
}

/// Ops a span moved into a kernel may hold besides device work: pure
/// computations (index arithmetic, the values a load feeds a store).
bool isMovable(Operation *op) {
  return isDeviceWork(op) || (isMemoryEffectFree(op) && op->getNumRegions() == 0);
}

struct WrapHostLoopsPass : public PassWrapper<WrapHostLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WrapHostLoopsPass)
  StringRef getArgument() const override { return "het-gpu-wrap-host-loops"; }
  StringRef getDescription() const override {
    return "Run loop nests left on the host as one-thread GPU kernels";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect>();
  }

  /// Wraps each span of device work in `block` (from a device-work op to
  /// the last op of the block that uses what the span defines) into a
  /// one-thread gpu.launch; descends into host loops that launch kernels.
  LogicalResult wrapBlock(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    llvm::DenseMap<Operation *, size_t> position;
    for (size_t i = 0; i < ops.size(); ++i)
      position[ops[i]] = i;
    for (size_t i = 0; i < ops.size(); ++i) {
      Operation *op = ops[i];
      if (isa<scf::ForOp, scf::ParallelOp>(op) && launchesKernels(op)) {
        for (Region &region : op->getRegions())
          for (Block &inner : region)
            if (failed(wrapBlock(inner)))
              return failure();
        continue;
      }
      if (!isDeviceWork(op))
        continue;
      size_t last = i;
      for (size_t k = i; k <= last; ++k)
        for (Value result : ops[k]->getResults())
          for (Operation *user : result.getUsers()) {
            Operation *inBlock = block.findAncestorOpInBlock(*user);
            if (!inBlock || inBlock == block.getTerminator())
              return ops[k]->emitError("het-gpu-wrap-host-loops: a value computed from "
                                       "device memory is used by the host; it cannot move "
                                       "into a kernel");
            last = std::max(last, position.lookup(inBlock));
          }
      for (size_t k = i; k <= last; ++k)
        if (!isMovable(ops[k]))
          return ops[k]->emitError("het-gpu-wrap-host-loops: host work (")
                 << ops[k]->getName() << ") sits between device accesses that belong together";
      OpBuilder b(op);
      Location loc = op->getLoc();
      Value one = b.create<arith::ConstantIndexOp>(loc, 1);
      auto launch = b.create<gpu::LaunchOp>(loc, one, one, one, one, one, one);
      OpBuilder inside = OpBuilder::atBlockBegin(&launch.getBody().front());
      auto terminator = inside.create<gpu::TerminatorOp>(loc);
      for (size_t k = i; k <= last; ++k)
        ops[k]->moveBefore(terminator);
      i = last;
    }
    return success();
  }

  void runOnOperation() override {
    for (func::FuncOp function : gpuFunctions(getOperation()))
      if (failed(wrapBlock(function.getBody().front())))
        return signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createWrapHostLoopsPass() {
  return std::make_unique<WrapHostLoopsPass>();
}
