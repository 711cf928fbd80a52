//===- LaunchToHostLoops.cpp - run mapped kernels on the host --------------===//
//
// Host emulation (het-compile --gpu-emulate): each gpu.launch of the mapped
// step becomes loops over its grid and its block, its body run once per
// (block, thread) with the ids as loop variables. The kernels are exactly
// those a GPU build serializes -- the same tiling, the same in-bounds
// checks, the same index arithmetic from block and thread ids -- run one
// thread after another. It is the correctness harness of the GPU lowering
// on machines without GPUs, not a fast path: the loops are sequential, and
// a kernel that needed threads to run together (barriers, shared memory)
// is refused rather than emulated wrongly.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

struct LaunchToHostLoopsPass
    : public PassWrapper<LaunchToHostLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LaunchToHostLoopsPass)
  StringRef getArgument() const override { return "het-gpu-launch-to-host-loops"; }
  StringRef getDescription() const override {
    return "Emulate each gpu.launch with loops over its blocks and threads";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<scf::SCFDialect, arith::ArithDialect>();
  }
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
          launch.getDynamicSharedMemorySize()) {
        launch.emitError("het-gpu-launch-to-host-loops: asynchronous launches and dynamic "
                         "shared memory are not emulated");
        return signalPassFailure();
      }
      bool cooperative = false;
      launch.getBody().walk([&](Operation *op) {
        cooperative |= isa<gpu::BarrierOp, gpu::ShuffleOp, gpu::AllReduceOp>(op);
      });
      if (cooperative) {
        launch.emitError("het-gpu-launch-to-host-loops: a kernel whose threads cooperate "
                         "(barriers, shuffles, block reductions) cannot run one thread at a "
                         "time");
        return signalPassFailure();
      }
      OpBuilder b(launch);
      Location loc = launch.getLoc();
      Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
      Value one = b.create<arith::ConstantIndexOp>(loc, 1);
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      // Blocks outside, threads inside, x innermost (as a GPU would number
      // them; the order does not matter to kernels without cooperation).
      SmallVector<Value> bounds{grid.z, grid.y, grid.x, block.z, block.y, block.x};
      SmallVector<Value> ivs;
      for (Value bound : bounds) {
        auto loop = b.create<scf::ForOp>(loc, zero, bound, one);
        ivs.push_back(loop.getInductionVar());
        b.setInsertionPoint(loop.getBody()->getTerminator());
      }
      IRMapping map;
      gpu::KernelDim3 blockIds = launch.getBlockIds(), threadIds = launch.getThreadIds();
      gpu::KernelDim3 gridSize = launch.getGridSize(), blockSize = launch.getBlockSize();
      map.map(blockIds.z, ivs[0]);
      map.map(blockIds.y, ivs[1]);
      map.map(blockIds.x, ivs[2]);
      map.map(threadIds.z, ivs[3]);
      map.map(threadIds.y, ivs[4]);
      map.map(threadIds.x, ivs[5]);
      map.map(gridSize.x, grid.x);
      map.map(gridSize.y, grid.y);
      map.map(gridSize.z, grid.z);
      map.map(blockSize.x, block.x);
      map.map(blockSize.y, block.y);
      map.map(blockSize.z, block.z);
      Region &body = launch.getBody();
      if (!body.hasOneBlock()) {
        launch.emitError("het-gpu-launch-to-host-loops: a kernel body of several blocks");
        return signalPassFailure();
      }
      for (Operation &op : body.front().without_terminator())
        b.clone(op, map);
      launch.erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createLaunchToHostLoopsPass() {
  return std::make_unique<LaunchToHostLoopsPass>();
}
