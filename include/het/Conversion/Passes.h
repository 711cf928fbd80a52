//===- Passes.h - lowering het to native CPU code -------------------*- C++ -*-===//
//
// The CPU code generator: het ops become linalg/tensor/arith/math (element-
// wise work, reductions, softmax, layer norm, cross-entropy, optimizer
// updates, layout changes) or calls into libhetrt (matmul, convolution,
// batch normalization, pooling, embeddings), whose
// library -- oneDNN or het's reference loops -- is chosen here and recorded
// in the IR as the callee's name (`hetrt_dnnl_*` / `hetrt_ref_*`). The third
// library, `mlir`, generates matmul, linear layers and convolutions as
// linalg contractions instead of calling anything. Upstream
// passes then bufferize and lower to the LLVM dialect; see docs/codegen.md.
//
//===----------------------------------------------------------------------===//

#ifndef HET_CONVERSION_PASSES_H
#define HET_CONVERSION_PASSES_H

#include "het/Conversion/ContractionTiling.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace mlir::het {

/// Which implementation the library-backed ops get: oneDNN primitives,
/// het's reference loops (libhetrt), or code generated from linalg (Mlir:
/// matmul, linear, linear_grad, groups == 1 conv2d and its gradients; the
/// other library ops call the reference kernels). These are the kernels of
/// the `cpu.onednn` and `cpu.mlir` device kinds. Cudnn is a GPU's: every op
/// generated as for Mlir except convolutions, which call cuDNN
/// (hetrt_cudnn_*; NVIDIA only).
enum class KernelLibrary { Dnnl, Reference, Mlir, Cudnn };

/// "dnnl", "reference", "mlir", "cudnn" (the spelling of the pass option, of
/// het-compile's --library and of the `het.kernel_library` function
/// attribute); std::nullopt for anything else.
std::optional<KernelLibrary> parseKernelLibrary(llvm::StringRef name);
llvm::StringRef kernelLibraryName(KernelLibrary library);

/// A function's choice of kernels, overriding the pass option (below).
constexpr llvm::StringLiteral kKernelLibraryAttr = "het.kernel_library";

/// On a pipeline's stage function placed on a GPU: the target its loops are
/// mapped and compiled for ("cuda sm_90", "hip gfx942"; GpuTarget::label).
/// The GPU passes map only the marked functions of a module that has any,
/// and the CPU-only passes (outlining, out-parameter elision) skip them.
constexpr llvm::StringLiteral kGpuTargetAttr = "hetrt.gpu_target";

/// On a het op lowered to a runtime call: one flag per operand, then per
/// result, set where the buffer is a channel-blocked activation
/// (het-channel-blocked-activations; lib/Runtime/ChannelBlock.h).
constexpr llvm::StringLiteral kChannelBlockedAttr = "hetrt.channel_blocked";

/// `het-channel-blocked-activations`: marks the activations that only
/// oneDNN convolutions, batch norms and pooling touch (in functions whose
/// kernels are `library`'s or, by attribute, oneDNN's) with
/// kChannelBlockedAttr on their producer and users, so they stay in
/// oneDNN's blocked layout between calls. Runs before het-outline-layers.
std::unique_ptr<Pass> createChannelBlockedActivationsPass(KernelLibrary library);

/// `convert-het-to-linalg`: every het compute op of a training step is
/// lowered; an op the CPU backend does not handle is an error naming it.
/// A function's `het.kernel_library` attribute ("dnnl" | "reference" |
/// "mlir") overrides `library` for the ops inside it, so one module can
/// hold stage functions compiled for different device kinds.
/// `nativeBf16Products`: oneDNN runs bf16 matrix products and convolutions
/// as bf16 (f32 accumulation); false: they too compute in f32 on their
/// bf16-rounded operands (the same values: a product of two bf16 values is
/// exact in f32), where oneDNN's bf16 matmul is slower than its f32 one
/// (lib/Runtime/DnnlProductRates.h). `generatedBf16Products`: the same for
/// generated contractions (library mlir), which read bf16 operands for the
/// AVX512-BF16 dot product (het/Support/MultiplyAddPeaks.h).
std::unique_ptr<Pass> createConvertHetToLinalgPass(KernelLibrary library,
                                                   bool nativeBf16Products = true,
                                                   bool generatedBf16Products = false);

/// `het-build-entry-points`: picks the training step (`@*_train_step`),
/// adds `@<model>_predict` (the forward function returning the logits of its
/// cross-entropy) when there is one, records the calling convention the
/// runtime needs as the module attribute `hetrt.model_info`, and drops every
/// other function.
std::unique_ptr<Pass> createBuildEntryPointsPass();

/// `het-update-after-gradient`: each optimizer update moves to just after
/// its gradient is computed, so gradients die early and a layer's backward
/// and updates form one run for het-outline-layers.
std::unique_ptr<Pass> createUpdateAfterGradientPass();

/// `het-outline-layers`: each run of consecutive ops of one `het.layer`
/// in a function becomes a call (carrying the layer) to a private function;
/// structurally identical runs share one function, so a model's repeated
/// blocks are lowered and compiled once. The module's
/// `hetrt.outlined_functions` and `hetrt.outlined_calls` count them.
std::unique_ptr<Pass> createOutlineLayersPass();

/// On a runtime call that may write its result buffers after it returns
/// (a pipeline's receive: libhetrt fills them at the phase's last receive),
/// so their buffers live to the end of their block.
constexpr llvm::StringLiteral kRetainsBuffersAttr = "hetrt.retains_buffers";

/// `het-free-at-last-use`: after bufferization, frees each buffer right
/// after the last use of it, its views and its address (one walk); a
/// module whose buffers escape that analysis gets MLIR's ownership-based
/// deallocation instead. The module's `hetrt.deallocation` says which.
std::unique_ptr<Pass> createFreeAtLastUsePass();

/// `het-buffer-entry-signatures`: public functions nothing in the module
/// refers to (the step, predict, pipeline stages) take buffers and write
/// their tensor results to out-parameters before One-Shot Bufferize, whose
/// function analysis is quadratic in a function's arity.
std::unique_ptr<Pass> createBufferEntrySignaturesPass();

/// `het-elide-out-param-copies`: a result copied into its out-parameter at
/// the end of a function is computed there instead (the copy was the last
/// use of its buffer and the out-parameter's only use).
std::unique_ptr<Pass> createElideOutParamCopiesPass();

/// `het-parallel-loops-to-runtime`: the outermost parallel loop of each
/// large generated loop nest becomes a task run by `hetrt_parallel_for` on
/// the executable's threads (oneDNN's OpenMP pool), split along its first
/// dimension. `het-emit-parallel-tasks` defines the tasks once the module
/// is in the LLVM dialect.
std::unique_ptr<Pass> createParallelLoopsToRuntimePass();
std::unique_ptr<Pass> createEmitParallelTasksPass();

/// `het-emit-entry-points`: in the LLVM dialect (buffers as bare
/// pointers, results as out-parameters), adds the C-callable
/// `het_step(void **in, void **out)` (and `het_predict`), the
/// `het_model_info` string and a `main` that hands both to `hetrt_main`.
std::unique_ptr<Pass> createEmitEntryPointsPass();

/// `convert-het-to-runtime`: a partitioned, scheduled step (het-partition,
/// het-pipeline-schedule) becomes one forward, backward and update function
/// per stage, with `het.send`/`het.recv`/`het.all_reduce` as calls into
/// libhetrt (which runs them on hetccl), each function marked with the
/// kernel library of its stage's device kind; the runtime's description of
/// the pipeline goes into `hetrt.model_info`. Needs `hetrt.step_signature`
/// (describeStep of the unpartitioned step) on the module.
std::unique_ptr<Pass> createConvertHetToRuntimePass();

/// The `step`/`in`/`out` lines of `hetrt.model_info` for a training step:
/// names, types, roles and initializers of its arguments, its results.
FailureOr<std::string> describeStep(func::FuncOp step);
/// "f32 2 32 64" (element type, rank, sizes) or an error at `where`.
FailureOr<std::string> describeTensorType(Operation *where, Type type);

/// `het-tile-transposes`: transposes of the last two dimensions (on
/// buffers) in 16 x 16 blocks transposed in vector registers where both are
/// multiples of 16, else in 32 x 32 blocks of loops.
std::unique_ptr<Pass> createTileTransposesPass();
void registerTileTransposesPass();

/// `het-split-innermost-reductions`: a sum (on tensors) whose innermost
/// loop is a reduction becomes partial sums along that dimension (parallel,
/// so vectorizable, and tilable where the sum is of products) and a short
/// sum of them: batch norm's per-channel statistics, for one (CPU only).
std::unique_ptr<Pass> createSplitInnermostReductionsPass();
void registerSplitInnermostReductionsPass();

/// `het-fuse-elementwise`: MLIR's element-wise fusion, fusing a producer
/// only into a consumer that uses each of its elements once (or a producer
/// that computes nothing), so no element is computed twice.
std::unique_ptr<Pass> createFuseElementwisePass();
void registerFuseElementwisePass();

/// Options of the whole lowering.
struct CpuPipelineOptions {
  KernelLibrary library = KernelLibrary::Dnnl;
  /// Mixed precision: bf16 products on oneDNN's bf16 kernels (true) or in
  /// f32 on bf16-rounded operands (createConvertHetToLinalgPass).
  bool nativeBf16Products = true;
  /// The same for generated contractions (library mlir): bf16 operands,
  /// tiled onto the AVX512-BF16 dot product (the target CPU must have it).
  bool generatedBf16Products = false;
  /// Fuse element-wise linalg ops before bufferization (-O1 and up).
  bool fuseElementwise = true;
  /// Sums over an innermost dimension as vectorizable partial sums
  /// (het-split-innermost-reductions; GPU builds map reductions themselves).
  bool splitInnermostReductions = true;
  /// One function per distinct layer computation (het-outline-layers).
  bool outlineLayers = true;
  /// Free buffers at their last use (het-free-at-last-use) rather than at
  /// the end of their block (MLIR's ownership-based deallocation).
  bool freeAtLastUse = true;
  /// Compute results in their out-parameters (het-elide-out-param-copies).
  bool elideOutParamCopies = true;
  /// Run large generated loop nests on the executable's threads
  /// (het-parallel-loops-to-runtime).
  bool threadedLoops = true;
  /// The module is a pipeline (convert-het-to-runtime has run): its entry
  /// points and model info are made already.
  bool pipeline = false;
  /// Passes run on the bufferized step before deallocation (GPU host
  /// emulation maps and unmaps its loops there).
  std::function<void(OpPassManager &)> afterBufferization;
  /// Passes run once every buffer has its deallocation (a GPU executable
  /// maps its loops onto kernels there: the deallocation analysis knows no
  /// GPU launch).
  std::function<void(OpPassManager &)> afterDeallocation;
  /// Which generated contractions het-tile-contractions turns into
  /// register-tiled vector loops (het-compile --tuning-db: the records
  /// het-tune kernels --library mlir made); unset, all stay linalg loops.
  ContractionTilingLookup contractionTiling;
  /// One tiling for every generated contraction it fits (het-compile
  /// --contraction-tiling; contractionTiling's records come first).
  std::optional<ContractionTiling> contractionTilingEverywhere;
  /// Allocate through _mlir_memref_to_llvm_alloc/free (libhetrt) instead of
  /// malloc/free: a GPU executable's buffers are managed memory, and every
  /// executable counts its buffers (the peak it reports, --profile-memory).
  bool genericAllocation = true;
  /// Passes run on the LLVM-dialect host code before the unrealized casts
  /// are reconciled (a GPU executable lowers its launches there).
  std::function<void(OpPassManager &)> beforeFinalization;
};

/// From a module holding a training step (output of het-training-pipeline)
/// to the LLVM dialect, ready for translation to LLVM IR.
void buildHetToLLVMPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

/// The front half both code generators share: entry points (unless a
/// pipeline), het to linalg with `options.library`, element-wise fusion,
/// one-shot bufferization across function boundaries, results as
/// out-parameters. The CPU pipeline goes on to deallocation and loops, the
/// GPU one (include/het/Conversion/GPU.h) to blocks and threads.
void buildHetToBuffersPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

/// The dialects and external interface models (bufferization, allocation)
/// the lowering needs, for tools that run it.
void registerCodegenDialects(DialectRegistry &registry);

/// Registers the three passes and the `het-lower-to-llvm` pipeline.
void registerHetConversionPasses();

} // namespace mlir::het

#endif // HET_CONVERSION_PASSES_H
