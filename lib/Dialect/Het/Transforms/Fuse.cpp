//===- Fuse.cpp - het-fuse and the training pipeline -----------------------===//
//
// Structural fusions (BN+ReLU, linear+activation, conv+BN) run first, to a
// fixed point; element-wise chains only afterwards, because absorbing a relu
// into a chain would hide the patterns the structural fusions look for.
//
//===----------------------------------------------------------------------===//

#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/Fusion.h"
#include "het/Dialect/Het/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::het {
#define GEN_PASS_DEF_HETFUSE
#include "het/Dialect/Het/Transforms/Passes.h.inc"
} // namespace mlir::het

using namespace mlir;
using namespace mlir::het;

namespace {
struct FusePass : mlir::het::impl::HetFuseBase<FusePass> {
  using HetFuseBase::HetFuseBase;

  void runOnOperation() override {
    RewritePatternSet structural(&getContext());
    if (bnRelu)
      populateBatchNormReluFusionPatterns(structural);
    if (linearActivation)
      populateLinearActivationFusionPatterns(structural);
    if (convBnFold)
      populateConvBatchNormFoldingPatterns(structural);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(structural))))
      return signalPassFailure();
    if (!elementwise)
      return;
    RewritePatternSet chains(&getContext());
    populateElementwiseFusionPatterns(chains);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(chains))))
      return signalPassFailure();
  }
};

struct TrainingPipelineOptions : PassPipelineOptions<TrainingPipelineOptions> {
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::desc("sgd | adam | adamw | none"),
                                llvm::cl::init("sgd")};
  Option<double> learningRate{*this, "learning-rate", llvm::cl::desc("learning rate"),
                              llvm::cl::init(0.01)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("weight decay: L2 (sgd, adam) or decoupled (adamw)"),
                             llvm::cl::init(0.0)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("Adam first-moment decay"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("Adam second-moment decay"),
                       llvm::cl::init(0.999)};
  Option<double> epsilon{*this, "epsilon", llvm::cl::desc("Adam denominator term"),
                         llvm::cl::init(1e-8)};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("clip the gradients' global 2-norm to this before the updates (0: none)"),
      llvm::cl::init(0.0)};
  Option<bool> fuse{*this, "fuse", llvm::cl::desc("run het-fuse"), llvm::cl::init(true)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("run het-fuse-attention before het-autodiff (for builds whose kernels "
                     "run het.attention as one op: CPU with oneDNN)"),
      llvm::cl::init(false)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("fp32 (default), or bf16 | fp16: het-autocast before het-autodiff (matrix "
                     "products in the low format, f32 master weights)"),
      llvm::cl::init("fp32")};
  Option<std::string> layerPrecisions{
      *this, "layer-precisions",
      llvm::cl::desc("the format of each layer's products (fp32|bf16|fp16, comma-separated, "
                     "by het.layer), overriding `precision` layer by layer"),
      llvm::cl::init("")};
  ListOption<int64_t> f32Boundaries{
      *this, "f32-boundaries",
      llvm::cl::desc("layers that 16-bit values from earlier layers reach in f32 (het.layer "
                     "indices: the ends of pipeline stages whose replicas train in different "
                     "formats)")};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("dynamic | none | auto (default: dynamic with fp16, none otherwise): "
                     "loss scaling as torch.amp.GradScaler"),
      llvm::cl::init("auto")};
  Option<double> initScale{*this, "init-scale", llvm::cl::desc("the first loss scale"),
                           llvm::cl::init(65536.0)};
  Option<int64_t> growthInterval{*this, "growth-interval",
                                 llvm::cl::desc("good steps before the loss scale doubles"),
                                 llvm::cl::init(2000)};
  Option<std::string> recompute{
      *this, "recompute",
      llvm::cl::desc("none (default) | selective | full: het-recompute on the training step "
                     "(the backward recomputes forward values instead of keeping them)"),
      llvm::cl::init("none")};
  Option<std::string> recomputeLayers{
      *this, "recompute-layers",
      llvm::cl::desc("each layer's recomputation (none|selective|full, comma-separated, by "
                     "het.layer), overriding `recompute` layer by layer"),
      llvm::cl::init("")};
  Option<bool> recomputeReport{
      *this, "recompute-report",
      llvm::cl::desc("remark on what het-recompute recomputes and the bytes it saves"),
      llvm::cl::init(false)};
};
/// The entries of a comma-separated per-layer option (empty ones skipped).
SmallVector<std::string> commaList(StringRef text) {
  SmallVector<std::string> out;
  for (StringRef name : llvm::split(text, ','))
    if (!name.empty())
      out.push_back(name.str());
  return out;
}
} // namespace

void mlir::het::registerHetTrainingPipeline() {
  PassPipelineRegistration<TrainingPipelineOptions>(
      "het-training-pipeline",
      "forward model -> fused training step: [het-fuse-attention,] [het-autocast,] het-autodiff, "
      "canonicalize, "
      "het-fuse, canonicalize, cse[, het-recompute]",
      [](OpPassManager &pm, const TrainingPipelineOptions &options) {
        if (options.fuseAttention)
          pm.addNestedPass<func::FuncOp>(createHetFuseAttention());
        SmallVector<std::string> layers = commaList(options.layerPrecisions);
        bool anyFp16 = options.precision == "fp16" || llvm::is_contained(layers, "fp16");
        if ((options.precision != "fp32" && options.precision != "tf32") || !layers.empty()) {
          HetAutocastOptions autocast;
          autocast.precision =
              options.precision == "tf32" ? std::string("fp32") : options.precision.getValue();
          autocast.layerPrecisions = layers;
          SmallVector<int64_t> boundaries(options.f32Boundaries.begin(),
                                          options.f32Boundaries.end());
          autocast.f32Boundaries = boundaries;
          pm.addNestedPass<func::FuncOp>(createHetAutocast(autocast));
        }
        HetAutodiffOptions autodiff;
        // AdamW is Adam with the decay decoupled from the gradient.
        bool adamw = options.optimizer == "adamw";
        autodiff.optimizer = adamw ? std::string("adam") : options.optimizer.getValue();
        autodiff.decoupled = adamw;
        autodiff.learningRate = options.learningRate;
        autodiff.momentum = options.momentum;
        autodiff.weightDecay = options.weightDecay;
        autodiff.beta1 = options.beta1;
        autodiff.beta2 = options.beta2;
        autodiff.epsilon = options.epsilon;
        autodiff.clipGradNorm = options.clipGradNorm;
        autodiff.lossScale =
            options.lossScale == "dynamic" || (options.lossScale == "auto" && anyFp16);
        autodiff.initScale = options.initScale;
        autodiff.growthInterval = options.growthInterval;
        pm.addPass(createHetAutodiff(autodiff));
        pm.addPass(createCanonicalizerPass());
        if (options.fuse)
          pm.addNestedPass<func::FuncOp>(createHetFuse());
        pm.addPass(createCanonicalizerPass());
        pm.addPass(createCSEPass());
        SmallVector<std::string> recomputeLayers = commaList(options.recomputeLayers);
        if (options.recompute != "none" || !recomputeLayers.empty()) {
          // Last: the clones it makes are what the backward runs.
          HetRecomputeOptions recompute;
          recompute.mode = options.recompute;
          recompute.layerModes = recomputeLayers;
          recompute.report = options.recomputeReport;
          pm.addNestedPass<func::FuncOp>(createHetRecompute(recompute));
        }
      });
}
