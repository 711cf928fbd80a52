//===- TileTransposes.cpp - het-tile-transposes: transposes in cache-sized blocks ===//
//
// Generated kernels transpose a linear layer's weight every step (the
// contraction's vector loads want its output dimension contiguous,
// ContractionsToLinalg.cpp) and attention transposes its heads. Lowered as
// two plain loops, a transpose of a 1024 x 1024 matrix reads one element per
// 4 KiB row: every read a new cache line (8.9% of the benchmark MLP's tuned
// step on one thread). Here, where both transposed dimensions are multiples
// of 16 (f32, contiguous): 16 x 16 blocks, 16 row loads transposed in vector
// registers (vector.transpose lowered to shuffles) and 16 row stores (the
// MLP's tuned step 6.3-6.8k -> 6.9-7.2k samples/s). Otherwise 32 x 32 blocks
// of loops, whose 32 rows stay in the L1 cache (8.9% -> 6.6%). Same values,
// so no tuning is needed; the block loops are parallel (threads split them).
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorTransforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// Edge of a block: 32 x 32 floats, 4 KiB read and 4 KiB written.
constexpr int64_t kBlock = 32;
/// Edge of a block transposed in vector registers: 16 rows of 16 f32 lanes.
constexpr int64_t kLanes = 16;

struct TileTransposesPass
    : public PassWrapper<TileTransposesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TileTransposesPass)
  StringRef getArgument() const override { return "het-tile-transposes"; }
  StringRef getDescription() const override {
    return "Tile transposes of the last two dimensions (on buffers) into 32 x 32 blocks";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect, vector::VectorDialect>();
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
    bool vectorized = false;
    for (linalg::TransposeOp op : transposes) {
      if (succeeded(transposeInRegisters(rewriter, op))) {
        vectorized = true;
        continue;
      }
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
    if (!vectorized)
      return;
    // The 16 x 16 transposes as shuffles of the 16 rows (what convert-
    // vector-to-llvm would otherwise do element by element).
    RewritePatternSet patterns(&getContext());
    vector::VectorTransformsOptions options;
    options.vectorTransposeLowering = vector::VectorTransposeLowering::Shuffle16x16;
    vector::populateVectorTransposeLoweringPatterns(patterns, options);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }

  /// Blocks of 16 x 16 f32 where both transposed dimensions are multiples of
  /// 16: 16 row loads, a transpose in registers, 16 row stores.
  static LogicalResult transposeInRegisters(IRRewriter &rewriter, linalg::TransposeOp op) {
    auto inType = dyn_cast<MemRefType>(op.getInput().getType());
    auto outType = cast<MemRefType>(op.getInit().getType());
    int64_t rank = outType.getRank();
    if (!inType || !outType.getElementType().isF32() || !inType.getLayout().isIdentity() ||
        !outType.getLayout().isIdentity() || outType.getDimSize(rank - 1) % kLanes != 0 ||
        outType.getDimSize(rank - 2) % kLanes != 0)
      return failure();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    auto index = [&](int64_t v) { return rewriter.create<arith::ConstantIndexOp>(loc, v); };
    SmallVector<Value> lower, upper, steps;
    for (int64_t d = 0; d < rank; ++d) {
      lower.push_back(index(0));
      upper.push_back(index(outType.getDimSize(d)));
      steps.push_back(index(d + 2 < rank ? 1 : kLanes));
    }
    Value input = op.getInput(), output = op.getInit();
    rewriter.create<scf::ParallelOp>(
        loc, lower, upper, steps, [&](OpBuilder &b, Location, ValueRange ivs) {
          // out[..., i, j] = in[..., j, i] for the block at (i0, j0).
          Value i0 = ivs[rank - 2], j0 = ivs[rank - 1];
          auto rowType = VectorType::get({kLanes}, b.getF32Type());
          auto blockType = VectorType::get({kLanes, kLanes}, b.getF32Type());
          Value block = b.create<arith::ConstantOp>(loc, blockType,
                                                    DenseElementsAttr::get(blockType, 0.f));
          SmallVector<Value> at(ivs.begin(), ivs.end());
          for (int64_t r = 0; r < kLanes; ++r) {
            at[rank - 2] = b.create<arith::AddIOp>(loc, j0, b.create<arith::ConstantIndexOp>(loc, r));
            at[rank - 1] = i0;
            Value row = b.create<vector::LoadOp>(loc, rowType, input, at);
            block = b.create<vector::InsertOp>(loc, row, block, ArrayRef<int64_t>{r});
          }
          Value transposed =
              b.create<vector::TransposeOp>(loc, block, ArrayRef<int64_t>{1, 0});
          for (int64_t c = 0; c < kLanes; ++c) {
            at[rank - 2] = b.create<arith::AddIOp>(loc, i0, b.create<arith::ConstantIndexOp>(loc, c));
            at[rank - 1] = j0;
            Value row = b.create<vector::ExtractOp>(loc, transposed, ArrayRef<int64_t>{c});
            b.create<vector::StoreOp>(loc, row, output, at);
          }
          b.create<scf::ReduceOp>(loc);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createTileTransposesPass() {
  return std::make_unique<TileTransposesPass>();
}

void mlir::het::registerTileTransposesPass() { PassRegistration<TileTransposesPass>(); }
