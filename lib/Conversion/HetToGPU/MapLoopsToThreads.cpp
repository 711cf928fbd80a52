//===- MapLoopsToThreads.cpp - parallel loops onto blocks and threads -----===//
//
// Each outermost scf.parallel of the step (one per linalg op, its parallel
// dimensions first: ParallelDimsFirst.cpp) becomes a grid of blocks of up
// to `blockSize` threads:
//  - more than three dimensions are collapsed into three, the leading ones
//    into one, so no dimension is left to a sequential loop in every thread;
//  - the block's threads tile the innermost (contiguous) dimensions first:
//    x runs along the last dimension, so a warp's loads and stores of a
//    row-major buffer are consecutive addresses; a last dimension narrower
//    than the block leaves the rest of the block to the dimension before it
//    (a 256x10 output gets 16x16 threads, not 256 with 246 idle);
//  - fixed tile bounds with an in-bounds check (noMinMaxBounds), so the
//    thread loop has a constant trip count, the launch's block size.
// Upstream's scf-parallel-loop-tiling and gpu-map-parallel-loops, which
// this replaces, tile every loop's first dimension and map dimension 0 to
// x: threads strided a row apart, and blocks of one thread where the first
// dimension was not the tiled one. Loops that reduce a value are left to
// het-gpu-wrap-host-loops.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>
#include <optional>

using namespace mlir;
using namespace mlir::het;

namespace {

/// CUDA's and HIP's limits on a block's z extent and a grid's y and z.
constexpr int64_t kMaxThreadsZ = 64;
constexpr int64_t kMaxBlocksYZ = 65535;

std::optional<int64_t> tripCount(scf::ParallelOp loop, unsigned d) {
  auto lower = getConstantIntValue(loop.getLowerBound()[d]);
  auto upper = getConstantIntValue(loop.getUpperBound()[d]);
  auto step = getConstantIntValue(loop.getStep()[d]);
  if (!lower || !upper || !step || *step <= 0)
    return std::nullopt;
  return std::max<int64_t>(0, (*upper - *lower + *step - 1) / *step);
}

int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

/// The scf.parallel ops of `function` not nested in another one, that
/// reduce no value.
SmallVector<scf::ParallelOp> outermostLoops(func::FuncOp function) {
  SmallVector<scf::ParallelOp> loops;
  function.walk([&](scf::ParallelOp loop) {
    if (!loop->getParentOfType<scf::ParallelOp>() && loop.getNumReductions() == 0)
      loops.push_back(loop);
  });
  return loops;
}

gpu::ParallelLoopDimMappingAttr mappingTo(MLIRContext *context, gpu::Processor processor) {
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  return gpu::ParallelLoopDimMappingAttr::get(context, processor, identity, identity);
}

struct MapLoopsToThreadsPass
    : public PassWrapper<MapLoopsToThreadsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MapLoopsToThreadsPass)
  explicit MapLoopsToThreadsPass(int64_t blockSize = 256) : blockSize(blockSize) {}
  StringRef getArgument() const override { return "het-gpu-map-loops-to-threads"; }
  StringRef getDescription() const override {
    return "Tile the step's parallel loops into blocks of threads along their innermost "
           "dimensions and map them onto the GPU's grid";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect, scf::SCFDialect, arith::ArithDialect>();
  }

  /// Threads of a block per dimension (at most three) of a loop with trip
  /// counts `counts`, innermost dimensions first, their product at most
  /// blockSize.
  SmallVector<int64_t> threadTile(ArrayRef<std::optional<int64_t>> counts) const {
    unsigned rank = counts.size();
    SmallVector<int64_t> tile(rank, 1);
    int64_t budget = blockSize;
    for (unsigned i = 0; i < rank && budget > 1; ++i) {
      unsigned d = rank - 1 - i;
      std::optional<int64_t> count = counts[d];
      int64_t t = std::min(budget, count ? powerOfTwoAtLeast(std::max<int64_t>(*count, 1)) : budget);
      if (i == 2)
        t = std::min(t, kMaxThreadsZ);
      tile[d] = t;
      budget /= t;
    }
    return tile;
  }

  LogicalResult mapLoop(scf::ParallelOp loop) {
    MLIRContext *context = &getContext();
    unsigned rank = loop.getNumLoops();
    SmallVector<std::optional<int64_t>> counts;
    for (unsigned d = 0; d < rank; ++d)
      counts.push_back(tripCount(loop, d));
    SmallVector<int64_t> tile = threadTile(counts);
    auto [blocks, threads] = scf::tileParallelLoop(loop, tile, /*noMinMaxBounds=*/true);
    static const gpu::Processor blockIds[] = {gpu::Processor::BlockX, gpu::Processor::BlockY,
                                              gpu::Processor::BlockZ};
    static const gpu::Processor threadIds[] = {gpu::Processor::ThreadX, gpu::Processor::ThreadY,
                                               gpu::Processor::ThreadZ};
    SmallVector<gpu::ParallelLoopDimMappingAttr> blockMapping, threadMapping;
    for (unsigned d = 0; d < rank; ++d) {
      unsigned fromInnermost = rank - 1 - d;
      // A grid's y and z stop at 65535 blocks; beyond (or unknown) that
      // dimension loops inside each block instead.
      std::optional<int64_t> gridExtent;
      if (counts[d])
        gridExtent = (*counts[d] + tile[d] - 1) / tile[d];
      bool fits = fromInnermost == 0 || (gridExtent && *gridExtent <= kMaxBlocksYZ);
      blockMapping.push_back(
          mappingTo(context, fits ? blockIds[fromInnermost] : gpu::Processor::Sequential));
      threadMapping.push_back(mappingTo(context, threadIds[fromInnermost]));
    }
    if (failed(gpu::setMappingAttr(blocks, blockMapping)) ||
        failed(gpu::setMappingAttr(threads, threadMapping)))
      return loop.emitError("het-gpu-map-loops-to-threads: invalid mapping");
    // Parallel loops inside a thread's work run sequentially in it.
    LogicalResult nested = success();
    threads.getBody()->walk([&](scf::ParallelOp inner) {
      SmallVector<gpu::ParallelLoopDimMappingAttr> sequential(
          inner.getNumLoops(), mappingTo(context, gpu::Processor::Sequential));
      if (failed(gpu::setMappingAttr(inner, sequential)))
        nested = failure();
    });
    return nested;
  }

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (func::FuncOp function : gpuFunctions(getOperation())) {
      // At most three dimensions: the leading ones collapse into one.
      bool collapsed = false;
      for (scf::ParallelOp loop : outermostLoops(function)) {
        unsigned rank = loop.getNumLoops();
        if (rank <= 3)
          continue;
        std::vector<unsigned> leading(rank - 2);
        std::iota(leading.begin(), leading.end(), 0u);
        rewriter.setInsertionPoint(loop);
        collapseParallelLoops(rewriter, loop, {leading, {rank - 2}, {rank - 1}});
        collapsed = true;
      }
      // The collapsed bounds are products of the old ones: folded into
      // constants, the tiling below knows each dimension's extent.
      if (collapsed && failed(applyPatternsAndFoldGreedily(function, FrozenRewritePatternSet())))
        return signalPassFailure();
      for (scf::ParallelOp loop : outermostLoops(function))
        if (failed(mapLoop(loop)))
          return signalPassFailure();
    }
  }

  int64_t blockSize;
};

} // namespace

std::unique_ptr<Pass> mlir::het::createMapLoopsToThreadsPass(int64_t blockSize) {
  return std::make_unique<MapLoopsToThreadsPass>(blockSize);
}
