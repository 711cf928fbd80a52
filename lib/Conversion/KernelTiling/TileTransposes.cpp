//===- TileTransposes.cpp - het-tile-transposes: transposes in cache-sized blocks ===//
//
// Generated kernels transpose a linear layer's weight every step (the
// contraction's vector loads want its output dimension contiguous,
// ContractionsToLinalg.cpp) and attention transposes its heads. Lowered as
// two plain loops, a transpose of a 1024 x 1024 matrix reads one element per
// 4 KiB row: every read a new cache line (8.9% of the benchmark MLP's tuned
// step on one thread). In 32 x 32 blocks, the 32 rows a block reads stay in
// the L1 cache while it writes them out (6.6%; still scalar code). Same
// values, so no tuning is needed; the outer block loops are parallel
// (threads split them).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// Edge of a block: 32 x 32 floats, 4 KiB read and 4 KiB written.
constexpr int64_t kBlock = 32;

struct TileTransposesPass
    : public PassWrapper<TileTransposesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TileTransposesPass)
  StringRef getArgument() const override { return "het-tile-transposes"; }
  StringRef getDescription() const override {
    return "Tile transposes of the last two dimensions (on buffers) into 32 x 32 blocks";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  }

  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk([&](linalg::TransposeOp op) {
      auto type = dyn_cast<MemRefType>(op.getInit().getType());
      ArrayRef<int64_t> permutation = op.getPermutation();
      int64_t rank = int64_t(permutation.size());
      if (!type || !type.hasStaticShape() || rank < 2)
        return;
      // Only the last two dimensions swap; leading ones stay in place.
      for (int64_t d = 0; d + 2 < rank; ++d)
        if (permutation[d] != d)
          return;
      if (permutation[rank - 2] != rank - 1 || permutation[rank - 1] != rank - 2)
        return;
      // Small enough to stay in the cache whole: nothing to gain.
      if (type.getDimSize(rank - 1) * type.getDimSize(rank - 2) <= kBlock * kBlock)
        return;
      transposes.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::TransposeOp op : transposes) {
      int64_t rank = op.getInit().getType().getRank();
      SmallVector<int64_t> sizes(rank, 1);
      sizes[rank - 2] = sizes[rank - 1] = kBlock;
      linalg::LinalgTilingOptions options;
      options.setTileSizes(sizes).setLoopType(linalg::LinalgTilingLoopType::ParallelLoops);
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::TiledLinalgOp> tiled =
          linalg::tileLinalgOp(rewriter, cast<linalg::LinalgOp>(op.getOperation()), options);
      if (failed(tiled)) {
        op.emitError("could not tile this transpose");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createTileTransposesPass() {
  return std::make_unique<TileTransposesPass>();
}

void mlir::het::registerTileTransposesPass() { PassRegistration<TileTransposesPass>(); }
