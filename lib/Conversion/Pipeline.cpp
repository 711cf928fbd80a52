//===- Pipeline.cpp - from a het training step to the LLVM dialect ---------===//
//
// het-specific passes at both ends, upstream MLIR in between: one-shot
// bufferization across function boundaries, results turned into
// out-parameters, ownership-based deallocation, linalg to loops, and the
// standard conversions to the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "het/Dialect/Het/IR/HetDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::het;

namespace mlir::het {
void registerConvertHetToLinalgPass();
void registerBuildEntryPointsPass();
void registerEmitEntryPointsPass();
void registerOutlineLayersPass();
void registerChannelBlockedActivationsPass();
void registerUpdateAfterGradientPass();
void registerParallelLoopsToRuntimePass();
void registerEmitParallelTasksPass();
void registerFreeAtLastUsePass();
void registerElideOutParamCopiesPass();
void registerBufferEntrySignaturesPass();
void registerConvertHetToRuntimePass();
} // namespace mlir::het

namespace {

/// A function that returns one of its own arguments (a stage function
/// passing an input on, once canonicalization folded what was between)
/// gets a copy of it: buffer-results-to-out-params expects every returned
/// buffer to be made inside the function (MLIR 19 crashes on an argument).
struct CopyReturnedArgumentsPass
    : public PassWrapper<CopyReturnedArgumentsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CopyReturnedArgumentsPass)
  StringRef getArgument() const override { return "het-copy-returned-arguments"; }
  void runOnOperation() override {
    func::FuncOp function = getOperation();
    function.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        auto arg = dyn_cast<BlockArgument>(operand.get());
        auto type = dyn_cast<MemRefType>(operand.get().getType());
        if (!arg || !type || !type.hasStaticShape())
          continue;
        Value copy = b.create<memref::AllocOp>(ret.getLoc(), type);
        b.create<memref::CopyOp>(ret.getLoc(), arg, copy);
        operand.set(copy);
      }
    });
  }
};

/// Powers by small constant exponents as multiplications and square roots
/// (upstream's algebraic simplification: x^2 = x*x, x^3 = x*x*x, x^0.5 =
/// sqrt x, x^-1 = 1/x, ...), as PyTorch's CPU pow computes them; a libm
/// powf per element was 4.6% of a GPT-2 small step (the tanh GELU's x^3
/// and its gradient's x^2).
struct SimplifyPowersPass : public PassWrapper<SimplifyPowersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SimplifyPowersPass)
  StringRef getArgument() const override { return "het-simplify-powers"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, math::MathDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathAlgebraicSimplificationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// bf16 conversions (het.cast's arith.extf/truncf) as integer code: a
/// shift up, and round-to-nearest-even down (upstream's patterns). LLVM's
/// own bf16 truncation would call __truncsfbf2, which GCC 12's libgcc
/// lacks. Only these two ops are rewritten: the rest of arith-expand would
/// change f32 code too.
struct ExpandBFloat16Pass
    : public PassWrapper<ExpandBFloat16Pass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandBFloat16Pass)
  StringRef getArgument() const override { return "het-expand-bf16"; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::het::buildHetToBuffersPipeline(OpPassManager &pm, const CpuPipelineOptions &options) {
  if (!options.pipeline)
    pm.addPass(createBuildEntryPointsPass());
  pm.addPass(createChannelBlockedActivationsPass(options.library));
  if (options.outlineLayers) {
    pm.addNestedPass<func::FuncOp>(createUpdateAfterGradientPass());
    pm.addPass(createOutlineLayersPass());
  }
  pm.addPass(createConvertHetToLinalgPass(options.library, options.nativeBf16Products,
                                          options.generatedBf16Products));
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  if (options.fuseElementwise)
    pm.addPass(createFuseElementwisePass());
  if (options.splitInnermostReductions)
    pm.addNestedPass<func::FuncOp>(createSplitInnermostReductionsPass());
  pm.addPass(std::make_unique<SimplifyPowersPass>());
  pm.addPass(createCanonicalizerPass());

  bufferization::OneShotBufferizationOptions bufferization;
  bufferization.bufferizeFunctionBoundaries = true;
  bufferization.setFunctionBoundaryTypeConversion(
      bufferization::LayoutMapOption::IdentityLayoutMap);
  // A copy between two contiguous buffers is memref.copy, a memcpy once
  // lowered; other copies become linalg.copy, hence loops: a strided copy
  // (a slice, a concatenation) would otherwise be a call to MLIR's C runner
  // utilities, which het executables do not link.
  bufferization.memCpyFn = [](OpBuilder &b, Location loc, Value from, Value to) {
    auto contiguous = [](Value value) {
      auto type = dyn_cast<MemRefType>(value.getType());
      return type && type.hasStaticShape() && type.getLayout().isIdentity();
    };
    if (contiguous(from) && contiguous(to))
      b.create<memref::CopyOp>(loc, from, to);
    else
      b.create<linalg::CopyOp>(loc, from, to);
    return success();
  };
  pm.addPass(createBufferEntrySignaturesPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferization));
  pm.addNestedPass<func::FuncOp>(std::make_unique<CopyReturnedArgumentsPass>());
  bufferization::BufferResultsToOutParamsOpts outParams;
  outParams.hoistStaticAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  if (options.elideOutParamCopies)
    pm.addNestedPass<func::FuncOp>(createElideOutParamCopiesPass());
}

void mlir::het::buildHetToLLVMPipeline(OpPassManager &pm, const CpuPipelineOptions &options) {
  buildHetToBuffersPipeline(pm, options);
  if (options.afterBufferization)
    options.afterBufferization(pm);
  if (options.freeAtLastUse) {
    pm.addPass(createFreeAtLastUsePass());
  } else {
    bufferization::BufferDeallocationPipelineOptions deallocation;
    bufferization::buildBufferDeallocationPipeline(pm, deallocation);
  }
  if (options.afterDeallocation)
    options.afterDeallocation(pm);
  pm.addNestedPass<func::FuncOp>(createTileTransposesPass());
  if (options.contractionTiling || options.contractionTilingEverywhere)
    pm.addNestedPass<func::FuncOp>(createTileContractionsPass(
        options.contractionTiling, options.contractionTilingEverywhere,
        options.generatedBf16Products));

  if (options.threadedLoops) {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
    pm.addPass(createParallelLoopsToRuntimePass());
  } else {
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  }
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(std::make_unique<ExpandBFloat16Pass>());
  // Tiled contractions are vector loads, broadcasts and arithmetic.
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = options.genericAllocation;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  // Memrefs cross function boundaries as bare pointers (every boundary
  // type is static and identity-laid-out): a call passes one pointer per
  // buffer instead of a descriptor of 3 + 2 x rank values, which kept the
  // glue calling outlined layers large (EmitEntryPoints relies on it too:
  // its C wrappers pass the runtime's buffer addresses straight through).
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
  if (options.beforeFinalization)
    options.beforeFinalization(pm);
  pm.addPass(createEmitEntryPointsPass());
  if (options.threadedLoops)
    pm.addPass(createEmitParallelTasksPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // Per function, so that the pass manager spreads the functions over the
  // cores (the glue of a deep model is one large function).
  pm.addNestedPass<LLVM::LLVMFuncOp>(createCanonicalizerPass());
}

namespace {
struct HetLowerToLLVMOptions : public PassPipelineOptions<HetLowerToLLVMOptions> {
  // An enum: a name that is none of these is an option error naming them.
  Option<KernelLibrary> library{
      *this, "library", llvm::cl::desc("kernels, as het-compile --library"),
      llvm::cl::init(KernelLibrary::Dnnl),
      llvm::cl::values(clEnumValN(KernelLibrary::Dnnl, "dnnl", "oneDNN (default)"),
                       clEnumValN(KernelLibrary::Reference, "reference", "het's loops"),
                       clEnumValN(KernelLibrary::Mlir, "mlir", "generated from linalg"))};
};
} // namespace

void mlir::het::registerHetConversionPasses() {
  registerConvertHetToLinalgPass();
  registerBuildEntryPointsPass();
  registerEmitEntryPointsPass();
  registerOutlineLayersPass();
  registerChannelBlockedActivationsPass();
  registerUpdateAfterGradientPass();
  registerParallelLoopsToRuntimePass();
  registerEmitParallelTasksPass();
  registerFreeAtLastUsePass();
  registerElideOutParamCopiesPass();
  registerBufferEntrySignaturesPass();
  registerConvertHetToRuntimePass();
  registerTileContractionsPass();
  registerTileTransposesPass();
  registerSplitInnermostReductionsPass();
  registerFuseElementwisePass();
  PassPipelineRegistration<HetLowerToLLVMOptions>(
      "het-lower-to-llvm",
      "From a training step (het-training-pipeline output) to the LLVM dialect, as "
      "het-compile lowers it (--mlir-print-ir-before=<pass> shows any stage)",
      [](OpPassManager &pm, const HetLowerToLLVMOptions &options) {
        CpuPipelineOptions cpu;
        cpu.library = options.library;
        buildHetToLLVMPipeline(pm, cpu);
      });
}

void mlir::het::registerCodegenDialects(DialectRegistry &registry) {
  registry.insert<HetDialect, func::FuncDialect, arith::ArithDialect, tensor::TensorDialect,
                  linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                  cf::ControlFlowDialect, memref::MemRefDialect, affine::AffineDialect,
                  bufferization::BufferizationDialect, vector::VectorDialect,
                  LLVM::LLVMDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
}
