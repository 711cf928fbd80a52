//===- FuseElementwise.cpp - het-fuse-elementwise: fusion that never recomputes ===//
//
// MLIR's linalg-fuse-elementwise-ops fuses an element-wise producer into
// any consumer it alone feeds. Where the consumer reads each produced
// element once (an element-wise chain, a sum over it) that saves a buffer
// and a pass over memory. Where the consumer has loops the producer's
// element does not depend on -- a convolution's filter gradient reads its
// output gradient once per input channel and filter tap, a normalization
// reads per-channel factors once per pixel -- the producer's body runs that
// many times over: the generated CNN's first filter gradient recomputed
// batch norm's whole backward 27 times (and, no longer out + in0 * in1, it
// could not be register-tiled either), and 1 / sqrt(var + eps) ran per pixel
// instead of per channel.
//
// Here the same patterns and canonicalizations as MLIR's pass, with a
// control that fuses a single-use producer only where the consumer's loops
// all index it (each element used once), or where the producer computes
// nothing (a broadcast or copy: fusing it only saves its buffer). The
// arithmetic of every element is unchanged either way: same results, bit for
// bit; only where each element is computed moves.
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace {

/// Whether fusing `operand`'s producer into its consumer computes each
/// produced element once (or the producer computes nothing).
bool fusesWithoutRecomputing(OpOperand *operand) {
  Operation *producer = operand->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  if (auto generic = dyn_cast<linalg::GenericOp>(producer))
    if (generic.getRegion().front().getOperations().size() == 1) // only the yield
      return true;
  auto consumer = dyn_cast<linalg::LinalgOp>(operand->getOwner());
  if (!consumer)
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(operand);
  for (unsigned d = 0; d < map.getNumDims(); ++d)
    if (!map.isFunctionOfDim(d))
      return false;
  return true;
}

struct FuseElementwisePass : public PassWrapper<FuseElementwisePass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const override { return "het-fuse-elementwise"; }
  StringRef getDescription() const override {
    return "Fuse element-wise linalg producers into consumers that use each element once "
           "(linalg-fuse-elementwise-ops without recomputation)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, linalg::LinalgDialect, memref::MemRefDialect,
                    tensor::TensorDialect>();
  }

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusesWithoutRecomputing);
    // As MLIR's pass: reshapes fold into their single-use producers.
    linalg::ControlFusionFn singleUse = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, singleUse);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, singleUse);
    GreedyRewriteConfig config;
    config.useTopDownTraversal = true; // as MLIR's pass, for compile time
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createFuseElementwisePass() {
  return std::make_unique<FuseElementwisePass>();
}

void mlir::het::registerFuseElementwisePass() { PassRegistration<FuseElementwisePass>(); }
