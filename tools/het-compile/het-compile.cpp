//===- het-compile.cpp - het model -> native training executable ----------===//
//
// Stages like a C compiler: parse and verify, build the training step
// (het-training-pipeline) unless the input already has one, lower to the
// LLVM dialect (lib/Conversion), translate to LLVM IR, optimize and emit
// objects in-process, per function on several threads with an object cache
// (lib/Target), and link them against libhetrt with the system's compiler
// driver. --emit stops early.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Distributed.h"
#include "het/Conversion/GPU.h"
#include "het/Conversion/Passes.h"
#include "het/Support/InstallLayout.h"
#include "het/Support/MultiplyAddPeaks.h"
// lib/Runtime's oneDNN rate measurement (HetDnnlProductRates).
#include "DnnlProductRates.h"
#include "het/Target/NativeCodegen.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Partition/Passes.h"
#include "het/Partition/PartitionPlan.h"
#include "het/Partition/PipelinePrecision.h"
#include "het/Plan/Error.h"
#include "het/Plan/MeasuredPlans.h"
#include "het/Plan/Plan.h"

#include "AutoPlan.h"
#include "BuildRecord.h"
#include "TuningRecords.h"
#include "het/Dialect/Het/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"

#include <chrono>
#include <optional>

using namespace mlir;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("het-compile options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                               cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("output file (default: the input's stem, "
                                              "plus .mlir/.ll/.o for those stages)"),
                                cl::value_desc("file"), cl::cat(category));
enum class Emit { Stages, Mlir, Llvm, Obj, Exe, GpuMlir, GpuBinary };
cl::opt<Emit> emit("emit", cl::desc("what to produce"), cl::init(Emit::Exe),
                   cl::values(clEnumValN(Emit::Stages, "stages",
                                         "a pipeline's stages in the het dialect, partitioned, "
                                         "scheduled and with their collectives, one module per "
                                         "replica share (--cluster/--plan only)"),
                              clEnumValN(Emit::Mlir, "mlir", "the LLVM-dialect MLIR module"),
                              clEnumValN(Emit::Llvm, "llvm", "optimized LLVM IR (.ll)"),
                              clEnumValN(Emit::Obj, "obj", "an object file"),
                              clEnumValN(Emit::Exe, "exe", "a linked training executable"),
                              clEnumValN(Emit::GpuMlir, "gpu-mlir",
                                         "--target=cuda|hip: the step with its kernels mapped "
                                         "and lowered, before serialization"),
                              clEnumValN(Emit::GpuBinary, "gpu-binary",
                                         "--target=cuda|hip: the device code object of the "
                                         "training step's kernels (an ELF cubin or hsaco)")),
                   cl::cat(category));
cl::opt<char> optLevel("O", cl::desc("optimization level: -O0, -O1, -O2 (default), -O3"),
                       cl::Prefix, cl::init('2'), cl::cat(category));
cl::opt<std::string> target("target",
                            cl::desc("x86_64 (default), or cuda / hip: an executable "
                                     "launching the step's kernels on the GPU through "
                                     "libhetrt, or with --emit=gpu-binary the code object "
                                     "(docs/gpu.md); a pipeline (--plan) compiles each stage "
                                     "for its group's device kind instead"),
                            cl::init("x86_64"), cl::cat(category));
cl::opt<bool> gpuEmulate("gpu-emulate",
                         cl::desc("with --target=cuda|hip: an executable that runs the mapped "
                                  "GPU kernels on the host, one block and thread after another "
                                  "(the GPU lowering's correctness harness, not a fast path); "
                                  "with --plan: the GPU stages' kernels run so"),
                         cl::init(false), cl::cat(category));
cl::opt<std::string> gpuArch("gpu-arch",
                             cl::desc("with --target=cuda: sm_80 (default), sm_86, sm_89, sm_90; "
                                      "with --target=hip: gfx90a (default), gfx942"),
                             cl::init(""), cl::cat(category));
cl::opt<std::string> gpuLibraries(
    "gpu-libraries",
    cl::desc("NVIDIA matrix products and convolutions: vendor (default; cuBLAS and cuDNN calls, "
             "run by oneDNN with --gpu-emulate) or generated (kernels like every other op); "
             "AMD ones are always generated"),
    cl::init("vendor"), cl::cat(category));
cl::opt<std::string> mcpu("mcpu", cl::desc("CPU to tune and select instructions for "
                                           "(default: this machine's)"),
                          cl::init("native"), cl::cat(category));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("sgd (default), adam or adamw (Adam with decoupled "
                                        "weight decay, as torch.optim.AdamW)"),
                               cl::init("sgd"), cl::cat(category));
cl::opt<double> weightDecay("weight-decay",
                            cl::desc("weight decay: an L2 term in the gradient with sgd and "
                                     "adam, decoupled with adamw (default 0, with adamw 0.01: "
                                     "PyTorch's defaults)"),
                            cl::init(0.0), cl::cat(category));
cl::list<double> adamBetas("betas", cl::desc("Adam/AdamW moment decays (default 0.9,0.999)"),
                           cl::CommaSeparated, cl::cat(category));
cl::opt<double> adamEpsilon("eps", cl::desc("Adam/AdamW denominator term (default 1e-8)"),
                            cl::init(1e-8), cl::cat(category));
cl::opt<double> clipGradNorm(
    "clip-grad-norm",
    cl::desc("clip the gradients' global 2-norm to this before each update, as "
             "torch.nn.utils.clip_grad_norm_ (in a pipeline the norm is summed over every "
             "stage: one scalar all-reduce per step); default 0: no clipping"),
    cl::init(0.0), cl::cat(category));
cl::opt<double> learningRate("lr", cl::desc("default learning rate (the executable's --lr "
                                            "overrides it)"),
                             cl::init(0.1), cl::cat(category));
cl::opt<double> momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0), cl::cat(category));
cl::opt<bool> fuse("fuse", cl::desc("run het-fuse (BN+ReLU, linear+activation, element-wise "
                                    "chains); --fuse=false for the unfused step"),
                   cl::init(true), cl::cat(category));
cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("with oneDNN kernels on the CPU: matmul + softmax + matmul becomes het.attention, "
             "run blocked over queries without the [..., Q, K] scores, forward and backward "
             "(--fuse-attention=false keeps the three ops)"),
    cl::init(true), cl::cat(category));
cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 (default); bf16 or fp16: mixed precision as PyTorch autocast does it "
             "(het-autocast: matrix products and convolutions in the low format, losses, "
             "norms, softmax and reductions in f32, f32 master weights and optimizer state); "
             "tf32: fp32 on CPUs (they have no TF32), TF32 tensor cores on NVIDIA GPUs"),
    cl::init("fp32"), cl::cat(category));
cl::list<std::string> layerPrecisions(
    "layer-precisions",
    cl::desc("the format of each layer's matrix products, by het.layer index (fp32, bf16 or "
             "fp16, comma-separated; layers past the list take --precision): the single-rank "
             "twin of a plan whose stages train in different formats (an fp16 kind's stage "
             "beside a bf16 one); any fp16 layer turns on loss scaling, decided job-wide"),
    cl::CommaSeparated, cl::cat(category));
cl::list<int64_t> f32Boundaries(
    "f32-boundaries",
    cl::desc("layers (het.layer indices) that 16-bit values from earlier layers reach in f32: "
             "with --layer-precisions, the single-rank twin of a plan with a stage whose "
             "replicas train in different formats, whose sends leave it in f32 (set from the "
             "plan with --plan)"),
    cl::CommaSeparated, cl::cat(category));
/// Of each stage whose replicas differ in format (from --plan), each replica
/// group's format.
std::vector<std::vector<std::string>> replicaFormats;
cl::opt<std::string> recompute(
    "recompute",
    cl::desc("activation recomputation (het-recompute): none (default), selective (the "
             "backward recomputes the attention core, norms, activations and element-wise "
             "chains; matrix products' results are kept) or full (only each layer's inputs are "
             "kept; the backward recomputes the layer); the traces are bit-identical"),
    cl::init("none"), cl::cat(category));
cl::list<std::string> recomputeLayers(
    "recompute-layers",
    cl::desc("each layer's recomputation by het.layer index (none, selective or full, "
             "comma-separated; layers past the list take --recompute)"),
    cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> bf16Products(
    "bf16-products",
    cl::desc("with --precision bf16 on the CPU: native (oneDNN's bf16 matrix products and "
             "convolutions; with --library=mlir generated contractions on the AVX512-BF16 dot "
             "product), f32 (the same products in f32 on the bf16-rounded operands: the "
             "same values, the f32 units' speed), or auto (default: each kind of product "
             "native where it is faster here: oneDNN's bf16 matmul timed against its f32 one "
             "(AMX cores run it several times faster), the bf16 dot product against the f32 "
             "FMA for generated contractions; het-dot-peak prints all four rates)"),
    cl::init("auto"), cl::cat(category));
cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("dynamic | none: loss scaling as torch.amp.GradScaler (default: dynamic with "
             "--precision fp16, none otherwise)"),
    cl::init("auto"), cl::cat(category));
cl::opt<double> initScale("init-scale", cl::desc("with loss scaling: the first scale (65536)"),
                          cl::init(65536.0), cl::cat(category));
cl::opt<int64_t> growthInterval(
    "growth-interval", cl::desc("with loss scaling: good steps before the scale doubles (2000)"),
    cl::init(2000), cl::cat(category));
cl::opt<std::string> library("library",
                             cl::desc("kernels for matmul/linear/conv2d/batch_norm: dnnl "
                                      "(oneDNN, default), reference (het's loops) or mlir "
                                      "(matmul/linear/conv2d, batch norm, pooling and "
                                      "embeddings generated from linalg)"),
                             cl::init("dnnl"), cl::cat(category));
cl::opt<std::string> runtimeDir("runtime-dir",
                                cl::desc("directory holding libhetrt.so (default: "
                                         "$HET_RUNTIME_DIR, else the lib/ folder beside "
                                         "het-compile's bin/, installed or in the build tree)"),
                                cl::init(""), cl::cat(category));
cl::opt<std::string> linker("linker", cl::desc("compiler driver used to link (default: "
                                               "clang-19, clang or cc from PATH)"),
                            cl::cat(category));
cl::OptionCategory distributed("het-compile options for pipelines (several ranks)");
cl::opt<std::string> clusterFile("cluster",
                                 cl::desc("cluster spec JSON: compile one executable whose ranks "
                                          "run the stages of a pipeline plan (run it with "
                                          "het-run -n <ranks>)"),
                                 cl::value_desc("C.json"), cl::cat(distributed));
cl::opt<std::string> planFile("plan",
                              cl::desc("plan JSON (het-plan --write-plan), or auto (the default "
                                       "with --cluster): het-compile measures each local "
                                       "device kind on the model and plans for --cluster"),
                              cl::value_desc("P.json|auto"), cl::init(""),
                              cl::cat(distributed));
cl::opt<std::string> contractionTiling(
    "contraction-tiling", cl::value_desc("tiling"),
    cl::desc("with --library=mlir: tile every generated contraction it fits so, e.g. 'row=d0 "
             "rows=4 width=16 vectors=2 order=rows' (docs/tuning.md; --tuning-db chooses per "
             "contraction instead)"),
    cl::cat(category));

cl::opt<std::string> tuningDb(
    "tuning-db",
    cl::desc("tuning database (het-tune, docs/tuning.md): each dense layer's matrix "
             "products run on the engine (oneDNN or OpenBLAS) het-tune kernels measured "
             "fastest on this host; with --library=mlir each generated contraction gets the "
             "register tiling het-tune kernels --library mlir measured fastest; --plan auto takes each device kind's step time from it "
             "when this step, compiled the same way on this host, was measured before, and "
             "records what it measures, and ranks its candidate plans by the iteration times "
             "het-run --tuning-db recorded for those that ran"),
    cl::value_desc("F.db"), cl::cat(category));
cl::opt<std::string> schedule("schedule", cl::desc("pipeline schedule: 1f1b (default) or gpipe"),
                              cl::init("1f1b"), cl::cat(distributed));
cl::opt<int> microBatches("micro-batches",
                          cl::desc("micro-batches per step: replaces the plan's (the global "
                                   "batch is split into this many); with --plan auto the "
                                   "planner chooses unless given"),
                          cl::init(1), cl::cat(distributed));
cl::opt<long> globalBatch("global-batch",
                          cl::desc("with --plan auto: samples per step (default: the model's "
                                   "batch x --micro-batches x the devices of the smallest "
                                   "group); a plan file says its own"),
                          cl::init(0), cl::cat(distributed));
cl::opt<std::string> compression("compression",
                                 cl::desc("gradient all-reduce compression: none (default), "
                                          "fp16, bf16, int8, topk:<ratio>"),
                                 cl::init("none"), cl::cat(distributed));
cl::opt<int> zeroStage("zero",
                       cl::desc("sharded data parallelism over each stage's replicas: 0 "
                                "(default: every replica holds all of its stage's training "
                                "state), 1 (ZeRO-1: each replica holds and updates a block of "
                                "rows of the optimizer state, sized by its share of the batch; "
                                "gradients are reduce-scattered and the updated blocks "
                                "all-gathered), 2 (ZeRO-2: each micro-batch's gradient is "
                                "reduce-scattered in the backward, only a block accumulated) "
                                "or 3 (ZeRO-3/FSDP: parameters held in blocks too, "
                                "all-gathered before each pass uses them); docs/memory.md"),
                       cl::init(0), cl::cat(distributed));
cl::opt<std::string> writePlan("write-plan",
                               cl::desc("with --plan auto: where to write the chosen plan "
                                        "(default: <output>.plan.json)"),
                               cl::value_desc("P.json"), cl::cat(distributed));
cl::opt<bool> outlineLayers("outline-layers",
                            cl::desc("compile each distinct layer computation once, as a "
                                     "function called for every layer that repeats it "
                                     "(default); --outline-layers=false lowers the step as one "
                                     "function"),
                            cl::init(true), cl::cat(category));
cl::opt<bool> threadedLoops("threaded-loops",
                            cl::desc("run large generated loop nests on the executable's "
                                     "--threads, shared with oneDNN (default); "
                                     "--threaded-loops=false keeps them on one thread"),
                            cl::init(true), cl::cat(category));
cl::opt<unsigned> jobs("jobs",
                       cl::desc("threads that optimise and emit code (default: one per "
                                "hardware thread)"),
                       cl::init(0), cl::cat(category));
cl::opt<std::string> cacheDirectory("cache-dir",
                                    cl::desc("the object cache: objects of functions compiled "
                                             "before are reused (default: $HET_CACHE_DIR, "
                                             "else ~/.cache/het/objects)"),
                                    cl::value_desc("dir"), cl::cat(category));
cl::opt<bool> noCache("no-cache", cl::desc("neither read nor write the object cache"),
                      cl::init(false), cl::cat(category));
cl::opt<bool> timing("time", cl::desc("print the time of each stage to stderr"),
                     cl::init(false), cl::cat(category));
cl::opt<bool> verifyEach("verify-each",
                         cl::desc("verify the IR after every pass, to find the pass that breaks "
                                  "it (the input and each pipeline's result are verified "
                                  "either way)"),
                         cl::init(false), cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "het-compile: error: " << message << "\n";
  return 1;
}

std::string defaultOutput() {
  llvm::StringRef stem = llvm::sys::path::stem(inputFile);
  switch (emit) {
  case Emit::Stages: return (stem + ".stages.mlir").str();
  case Emit::Mlir: return (stem + ".llvm.mlir").str();
  case Emit::Llvm: return (stem + ".ll").str();
  case Emit::Obj: return (stem + ".o").str();
  case Emit::Exe: return stem.str();
  case Emit::GpuMlir: return (stem + ".gpu.mlir").str();
  case Emit::GpuBinary:
    return (stem + (target == "hip" ? ".hsaco" : ".cubin")).str();
  }
  return stem.str();
}

/// --verify-each, --mlir-timing and MLIR's other pass manager options
/// (hidden from --help). Verifying after every pass is off by default, as
/// in a release clang: at 48 GPT blocks it was half of the lowering's time
/// and the part of it that grows with depth. runVerified checks each
/// pipeline's result once instead.
LogicalResult applyDeveloperOptions(PassManager &pm) {
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  pm.enableVerifier(verifyEach);
  auto passTiming = std::make_unique<DefaultTimingManager>();
  applyDefaultTimingManagerCLOptions(*passTiming);
  if (passTiming->isEnabled())
    pm.enableTiming(std::move(passTiming));
  return success();
}

/// Runs `pm` on `module` and verifies the result once (the pass manager
/// verifies after every pass only with --verify-each).
LogicalResult runVerified(PassManager &pm, ModuleOp module) {
  if (failed(pm.run(module)))
    return failure();
  if (!verifyEach && failed(mlir::verify(module))) {
    llvm::errs() << "het-compile: internal error: a pass produced IR that does not verify "
                    "(--verify-each names the pass)\n";
    return failure();
  }
  return success();
}

struct StageTimer {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  bool print = true; // with --time
  void done(const std::string &stage) {
    auto now = std::chrono::steady_clock::now();
    if (timing && print)
      llvm::errs() << "het-compile: " << stage << " "
                   << llvm::format("%.3f", std::chrono::duration<double>(now - start).count())
                   << " s\n";
    start = now;
  }
};

/// The compiler driver that links (and with --emit=obj combines) the
/// objects: --linker, else clang-19, clang or cc from PATH.
llvm::Expected<std::string> findLinkerDriver() {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (!linker.empty()) {
    auto found = llvm::StringRef(linker).contains('/')
                     ? llvm::ErrorOr<std::string>(linker.getValue())
                     : llvm::sys::findProgramByName(linker);
    if (!found || !llvm::sys::fs::can_execute(*found))
      return error("linker '" + linker + "' not found (--linker names a compiler driver such "
                   "as clang-19 or cc)");
    return *found;
  }
  for (const char *candidate : {"clang-19", "clang", "cc"})
    if (auto found = llvm::sys::findProgramByName(candidate))
      return *found;
  return error("no linker found: install clang-19 or cc, or pass --linker");
}

/// `het_gpu_target`, a NUL-terminated string the executable exports
/// ("cuda sm_90"): libhetrt reads it at start (dlsym) to open the vendor's
/// driver before allocating any buffer (lib/Runtime/Gpu/GpuDriver.cpp).
void addGpuTargetGlobal(ModuleOp module, const std::string &label) {
  OpBuilder b(module.getBodyRegion());
  std::string text = label + std::string(1, '\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  b.create<LLVM::GlobalOp>(module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::External,
                           "het_gpu_target", b.getStringAttr(text));
}

int lowerAndEmit(ModuleOp module, const mlir::het::CpuPipelineOptions &options, Emit emitKind,
                 const std::string &output, StageTimer &timer,
                 const std::string &gpuTargetLabel = "");

/// --target=cuda|hip --emit=gpu-binary: the step's kernels as one code
/// object, written to `output`.
int emitGpuBinary(ModuleOp module, const mlir::het::GpuTarget &gpu, const std::string &output,
                  StageTimer &timer) {
  PassManager pm(module.getContext());
  if (failed(applyDeveloperOptions(pm)))
    return 1;
  bool serialize = emit == Emit::GpuBinary;
  mlir::het::buildHetToGpuBinaryPipeline(pm, gpu, serialize);
  if (failed(runVerified(pm, module)))
    return fail("could not lower the training step to " + gpu.arch +
                " kernels (see the diagnostics above)");
  timer.done(serialize ? "gpu lowering and serialization" : "gpu lowering");
  std::error_code ec;
  llvm::raw_fd_ostream os(output, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write '" + output + "': " + ec.message());
  if (!serialize) {
    module.print(os);
    return 0;
  }
  llvm::Expected<std::string> binary = mlir::het::gpuBinaryOf(module);
  if (!binary)
    return fail(llvm::toString(binary.takeError()));
  os << *binary;
  return 0;
}

/// --contraction-tiling as a tiling (main has checked that it parses).
std::optional<mlir::het::ContractionTiling> tilingEverywhere() {
  if (contractionTiling.empty())
    return std::nullopt;
  return mlir::het::ContractionTiling::parse(contractionTiling);
}

/// Seconds per step of the whole (unpartitioned) training step compiled
/// with `library`'s kernels: a temporary executable runs 12 steps on one
/// thread and reports its throughput.
llvm::Expected<double> measureStep(ModuleOp stepModule, const std::string &library,
                                   StageTimer &timer) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  std::optional<mlir::het::KernelLibrary> kernels = mlir::het::parseKernelLibrary(library);
  if (!kernels)
    return error("no kernel library '" + library + "' in this build");
  OwningOpRef<ModuleOp> copy(stepModule.clone());
  llvm::SmallString<128> exe, log;
  if (llvm::sys::fs::createTemporaryFile("het-calibrate", "", exe) ||
      llvm::sys::fs::createTemporaryFile("het-calibrate", "out", log))
    return error("cannot create temporary files for the calibration run");
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(exe);
    llvm::sys::fs::remove(log);
  });
  mlir::het::CpuPipelineOptions options;
  options.library = *kernels;
  options.fuseElementwise = optLevel != '0';
  options.outlineLayers = outlineLayers;
  options.threadedLoops = threadedLoops;
  options.contractionTilingEverywhere = tilingEverywhere();
  if (lowerAndEmit(*copy, options, Emit::Exe, exe.str().str(), timer) != 0)
    return error("could not compile the calibration executable for " + library);
  llvm::SmallVector<llvm::StringRef> args{exe, "--steps", "12", "--threads", "1"};
  // A model imported from PyTorch takes constants (and its parameters) from
  // the .npz het.export wrote beside the .mlir: the run needs them.
  llvm::SmallString<256> arrays(inputFile.getValue());
  llvm::sys::path::replace_extension(arrays, ".npz");
  if (llvm::sys::fs::exists(arrays)) {
    args.push_back("--load");
    args.push_back(arrays);
  }
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  if (llvm::sys::ExecuteAndWait(exe, args, std::nullopt, redirects, 120, 0, &message) != 0) {
    // Its last line says why.
    std::string said;
    if (auto text = llvm::MemoryBuffer::getFile(log))
      said = (*text)->getBuffer().rtrim().rsplit('\n').second.str();
    return error("the calibration run for " + library + " failed" +
                 (message.empty() ? "" : ": " + message) + (said.empty() ? "" : ": " + said));
  }
  auto text = llvm::MemoryBuffer::getFile(log);
  if (!text)
    return error("cannot read the calibration run's output");
  // "throughput <X> samples/s (<N> steps of batch <B> in <T> s after the first; ..."
  for (llvm::StringRef line : llvm::split((*text)->getBuffer(), '\n')) {
    if (!line.consume_front("throughput "))
      continue;
    double samplesPerSecond = 0;
    long long batch = 0;
    llvm::StringRef rest = line.split(" samples/s").second;
    if (line.split(' ').first.getAsDouble(samplesPerSecond) ||
        rest.split("of batch ").second.split(' ').first.getAsInteger(10, batch) ||
        !(samplesPerSecond > 0))
      break;
    return double(batch) / samplesPerSecond;
  }
  return error("the calibration run for " + library + " printed no throughput");
}

/// measureStep through the tuning database when --tuning-db names one.
llvm::Expected<::het::compile::StepTime> calibratedStep(ModuleOp stepModule,
                                                        const std::string &library,
                                                        StageTimer &timer) {
  auto measure = [&] { return measureStep(stepModule, library, timer); };
  if (tuningDb.empty()) {
    llvm::Expected<double> seconds = measure();
    if (!seconds)
      return seconds.takeError();
    return ::het::compile::StepTime{*seconds, ""};
  }
  // The key hashes the step as it will be compiled: with the GEMM engines
  // the database's kernel records choose, and the generated contractions'
  // tilings (--contraction-tiling, else the database's records), so new
  // kernel records mean a new calibration.
  OwningOpRef<ModuleOp> keyed(stepModule.clone());
  if (library == "dnnl")
    ::het::compile::chooseGemmEngines(*keyed, tuningDb, inputFile, /*report=*/false);
  std::string codegen =
      llvm::formatv("-O{0} outline-layers={1} threaded-loops={2}", optLevel.getValue(),
                    outlineLayers ? 1 : 0, threadedLoops ? 1 : 0);
  if (library == "mlir") {
    if (auto tiling = tilingEverywhere()) {
      codegen += " tiling='" + tiling->str() + "'";
    } else if (auto tilings = ::het::compile::recordedTilings(tuningDb, /*quiet=*/true)) {
      std::string digest = tilings->fingerprint();
      if (!digest.empty())
        codegen += " tilings=" + digest;
    }
  }
  std::string workload = ::het::compile::calibrationWorkload(*keyed, library, codegen);
  return ::het::compile::recordedCalibration(tuningDb, workload, library, measure);
}

/// Whether any layer of any build computes in `format` (--precision,
/// --layer-precisions, or a format some replicas of a plan's stage train in).
bool usesFormat(StringRef format) {
  return precision == format || llvm::is_contained(layerPrecisions, format.str()) ||
         llvm::any_of(replicaFormats, [&](const std::vector<std::string> &formats) {
           return llvm::is_contained(formats, format.str());
         });
}

/// The options of het-training-pipeline that --optimizer, --lr, --momentum,
/// --fuse, --fuse-attention and --precision ask for. Attention is fused only where a
/// kernel runs it as one op: CPU builds with oneDNN (a pipeline stage on
/// another kind computes the fused op as its three ops again). Without
/// `withLayers` it leaves --layer-precisions out (a pipeline's variants set
/// them one by one).
std::string trainingOptions(bool withLayers = true) {
  bool attention = fuse && fuseAttention && target == "x86_64" && library == "dnnl";
  std::string layers = withLayers ? llvm::join(layerPrecisions, ",") : std::string();
  std::string boundaries;
  for (int64_t layer : f32Boundaries)
    boundaries += (boundaries.empty() ? "" : ",") + std::to_string(layer);
  // Loss scaling is one decision for every variant of a pipeline: on
  // where any of them trains a layer in fp16.
  std::string scaling = lossScale == "auto" && usesFormat("fp16") ? std::string("dynamic")
                                                                  : lossScale.getValue();
  std::string recomputed = llvm::join(recomputeLayers, ",");
  bool recomputes = recompute != "none" || !recomputed.empty();
  double decay = weightDecay.getNumOccurrences() ? weightDecay.getValue()
                 : optimizer == "adamw"           ? 0.01
                                                  : 0.0;
  double beta1 = adamBetas.size() == 2 ? adamBetas[0] : 0.9;
  double beta2 = adamBetas.size() == 2 ? adamBetas[1] : 0.999;
  std::string update = llvm::formatv(" weight-decay={0:e17} beta1={1:e17} beta2={2:e17} "
                                     "epsilon={3:e17} clip-grad-norm={4:e17}",
                                     decay, beta1, beta2, adamEpsilon.getValue(),
                                     clipGradNorm.getValue());
  return llvm::formatv("optimizer={0} learning-rate={1:e17} momentum={2:e17}{14} fuse={3} "
                       "fuse-attention={4} precision={5} loss-scale={6} init-scale={7:e17} "
                       "growth-interval={8}{9}{13} recompute={10}{11}{12}",
                       optimizer.getValue(), learningRate.getValue(), momentum.getValue(),
                       fuse ? "true" : "false", attention ? "true" : "false",
                       precision.getValue(), scaling, initScale.getValue(),
                       growthInterval.getValue(),
                       layers.empty() ? std::string() : " layer-precisions=" + layers,
                       recompute.getValue(),
                       recomputed.empty() ? std::string() : " recompute-layers=" + recomputed,
                       recomputes ? " recompute-report=true" : "",
                       boundaries.empty() ? std::string() : " f32-boundaries=" + boundaries,
                       update);
}

/// What is trained, as keys of measured plans name it
/// (het/Plan/MeasuredPlans.h): the input's bytes and the options that
/// change the step's work (not a learning rate, betas or decay, so runs
/// that differ only in those share their measurements).
std::string trainedModel() {
  if (inputFile == "-")
    return ""; // stdin is read once, by the parser
  auto bytes = llvm::MemoryBuffer::getFile(inputFile);
  if (!bytes)
    return "";
  std::string work = llvm::formatv(
      "optimizer={0} momentum={1} fuse={2} fuse-attention={3} precision={4} layers={5} "
      "loss-scale={6} recompute={7}/{8} clip={9} library={10} target={11}",
      optimizer.getValue(), momentum > 0, fuse.getValue(), fuseAttention.getValue(),
      precision.getValue(), llvm::join(layerPrecisions, ","), lossScale.getValue(),
      recompute.getValue(), llvm::join(recomputeLayers, ","), clipGradNorm > 0,
      library.getValue(), target.getValue());
  return ::het::plan::trainedModelKey((*bytes)->getBuffer().str(), work);
}

/// The plan the pipeline was built for (the chosen one with --plan auto).
std::string builtPlanFile;

/// --cluster/--plan: one module holding every stage's code for every share
/// of the micro-batch its replicas take (lib/Conversion/Distributed). With
/// --plan auto the plan is chosen here first, from speeds measured on this
/// model.
FailureOr<OwningOpRef<ModuleOp>> buildForCluster(ModuleOp module, StageTimer &timer,
                                                 const std::string &output) {
  if ((planFile.empty() || planFile == "auto") && clusterFile.empty()) {
    fail("--plan auto needs --cluster C.json");
    return failure();
  }
  if (microBatches < 1) {
    fail("--micro-batches must be at least 1");
    return failure();
  }
  if (schedule != "1f1b" && schedule != "gpipe") {
    fail("unknown --schedule '" + schedule + "' (use 1f1b or gpipe)");
    return failure();
  }
  // What is trained, keying the measured plans: read and digested once.
  const std::string modelKey = trainedModel();
  int compressionKind = 0;
  double ratio = 0;
  std::string problem;
  if (!mlir::het::parseCompression(compression, compressionKind, ratio, problem)) {
    fail(problem);
    return failure();
  }
  mlir::het::PipelineBuildOptions build;
  build.planFile = planFile.empty() ? "auto" : planFile.getValue();
  build.trainingPipeline = trainingOptions(/*withLayers=*/false);
  build.layerFormats.assign(layerPrecisions.begin(), layerPrecisions.end());
  build.replicaFormats = replicaFormats;
  build.schedule = schedule;
  build.microBatches = microBatches.getNumOccurrences() ? microBatches.getValue() : 0;
  build.compression = compression;
  build.zeroStage = zeroStage.getNumOccurrences() ? zeroStage.getValue() : -1;
  build.gpu.emulate = gpuEmulate;
  build.gpu.vendorLibraries = gpuLibraries == "vendor";
  // With a tuning database, a given plan is priced by its measurements.
  bool pricePlanFile =
      build.planFile != "auto" && !tuningDb.empty() && !clusterFile.empty();
  if (build.planFile == "auto" || pricePlanFile) {
    // Calibration and planning need the training step.
    OwningOpRef<ModuleOp> stepModule(module.clone());
    bool hasStep = false;
    for (auto function : stepModule->getOps<func::FuncOp>())
      hasStep |= function.getName().ends_with("_train_step");
    if (!hasStep) {
      PassManager pm(module.getContext());
      if (failed(parsePassPipeline("het-training-pipeline{" +
                                       trainingOptions() + "}",
                                   pm, llvm::errs())) ||
          failed(pm.run(*stepModule))) {
        fail("could not build the training step of '" + inputFile +
             "' (see the diagnostics above)");
        return failure();
      }
    }
    func::FuncOp step;
    for (auto function : stepModule->getOps<func::FuncOp>())
      if (function.getName().ends_with("_train_step"))
        step = function;
    timer.done("training step for calibration");
    if (pricePlanFile) {
      std::string report;
      llvm::Expected<double> predicted = ::het::compile::predictPlanFile(
          *stepModule, step, clusterFile, build.planFile, tuningDb, report);
      llvm::errs() << report;
      if (!predicted)
        llvm::errs() << "het-compile: warning: cannot price " << build.planFile
                     << " by the tuning database: " << llvm::toString(predicted.takeError())
                     << "\n";
      else if (*predicted > 0)
        build.predictedSeconds = *predicted;
    } else {
      ::het::compile::AutoPlanRequest request;
      request.tuningDb = tuningDb;
      request.modelKey = modelKey;
      request.clusterFile = clusterFile;
      // Per-layer formats are the plan's to state, not the planner's pick.
      request.format = !layerPrecisions.empty() ? ""
                       : precision == "tf32"    ? "fp32"
                                                : precision.getValue();
      request.microBatches =
          microBatches.getNumOccurrences() ? microBatches.getValue() : 0;
      request.globalBatch = globalBatch;
      request.planOut =
          writePlan.empty() ? output + ".plan.json" : writePlan.getValue();
      request.devicesOut = output + ".devices.json";
      // The calibration builds are timed as part of this stage, not as
      // stages of their own.
      StageTimer calibrationBuilds;
      calibrationBuilds.print = false;
      request.measureStep = [&](const std::string &library) {
        return calibratedStep(*stepModule, library, calibrationBuilds);
      };
      llvm::Expected<::het::compile::AutoPlanResult> chosen =
          ::het::compile::planForCluster(*stepModule, step, request);
      if (!chosen) {
        fail("--plan auto: " + llvm::toString(chosen.takeError()));
        return failure();
      }
      llvm::errs() << chosen->report << "het-compile: plan written to "
                   << request.planOut << ", the calibrated kinds to "
                   << request.devicesOut << "\n";
      build.predictedSeconds = chosen->predictedSeconds;
      build.planFile = request.planOut;
      timer.done("calibrate and plan");
    }
  }
  std::unique_ptr<llvm::ToolOutputFile> stagesFile;
  if (emit == Emit::Stages) {
    std::string errorMessage;
    stagesFile = openOutputFile(output, &errorMessage);
    if (!stagesFile) {
      fail(errorMessage);
      return failure();
    }
    build.stagesOutput = &stagesFile->os();
  }
  builtPlanFile = build.planFile;
  // The key het-run --tuning-db records the measured iteration time under.
  if (!build.planFile.empty())
    build.planKey = ::het::compile::measuredPlanKeyOfFile(modelKey, build.planFile);
  FailureOr<OwningOpRef<ModuleOp>> built = mlir::het::buildPipeline(module, build);
  if (succeeded(built) && stagesFile)
    stagesFile->keep();
  if (failed(built)) {
    fail("could not build the pipeline of '" + inputFile + "' for " + build.planFile +
         " (see the diagnostics above)");
    return failure();
  }
  timer.done("partition and specialise stages");
  return built;
}

/// How a built pipeline is lowered: as `options` when every stage is on a
/// CPU; with GPU stages, their functions mapped onto kernels for their
/// targets (run on the host with --gpu-emulate).
FailureOr<mlir::het::CpuPipelineOptions>
pipelineLowering(ModuleOp pipeline, const mlir::het::CpuPipelineOptions &options) {
  llvm::Expected<std::vector<mlir::het::GpuTarget>> targets = mlir::het::gpuTargetsOf(pipeline);
  if (!targets) {
    fail("internal error: " + llvm::toString(targets.takeError()));
    return failure();
  }
  if (targets->empty()) {
    if (gpuEmulate)
      llvm::errs() << "het-compile: note: --gpu-emulate: " << builtPlanFile
                   << " places no stage on a GPU\n";
    return options;
  }
  // gpu-module-to-binary serializes every kernel module with one toolkit
  // (the CUDA toolkit's ptxas, or the ROCm folder's lld and bitcode).
  if (!gpuEmulate && targets->front().vendor != targets->back().vendor) {
    std::string stages;
    for (auto function : pipeline.getOps<func::FuncOp>())
      if (auto label = function->getAttrOfType<StringAttr>(mlir::het::kGpuTargetAttr))
        if (function.getName().ends_with("_forward"))
          stages += (stages.empty() ? "" : ", ") + function.getName().drop_back(8).str() + " (" +
                    label.getValue().str() + ")";
    fail(builtPlanFile + " places stages on NVIDIA and AMD GPUs: " + stages +
         "; one executable holds kernels for one GPU vendor so far (--gpu-emulate runs both "
         "on the host)");
    return failure();
  }
  std::string names;
  for (mlir::het::GpuTarget &t : *targets) {
    t.vendorLibraries = gpuLibraries == "vendor";
    t.tf32 = precision == "tf32";
    names += (names.empty() ? "" : ", ") + t.label();
  }
  if (gpuEmulate)
    llvm::errs() << "het-compile: --gpu-emulate: the GPU stages' " << names
                 << " kernels run on the host one block and thread after another (a "
                    "correctness harness, not a fast path)\n";
  return mlir::het::gpuPipelineOptions(options, *targets, gpuEmulate);
}

} // namespace

namespace {
/// Lowers a module holding a training step (or a pipeline's stage
/// functions) to native code and writes what --emit asks for.
int lowerAndEmit(ModuleOp module, const mlir::het::CpuPipelineOptions &options, Emit emitKind,
                 const std::string &output, StageTimer &timer,
                 const std::string &gpuTargetLabel) {
  std::string errorMessage;
  if (!tuningDb.empty() && options.library == mlir::het::KernelLibrary::Dnnl)
    ::het::compile::chooseGemmEngines(module, tuningDb, inputFile, timer.print);
  mlir::het::CpuPipelineOptions lowering = options;
  // Generated contractions (--library=mlir, or a pipeline's cpu.mlir
  // stages) take their recorded tilings.
  std::shared_ptr<::het::tune::RecordedTilings> tilings;
  if (!tuningDb.empty() && !lowering.contractionTilingEverywhere &&
      (options.library == mlir::het::KernelLibrary::Mlir || options.pipeline)) {
    tilings = ::het::compile::recordedTilings(tuningDb);
    if (tilings)
      lowering.contractionTiling = [tilings](llvm::StringRef signature) {
        return tilings->lookup(signature);
      };
  }
  PassManager pm(module.getContext());
  if (failed(applyDeveloperOptions(pm)))
    return fail("bad --mlir-* pass manager option");
  mlir::het::buildHetToLLVMPipeline(pm, lowering);
  if (failed(runVerified(pm, module)))
    return fail("could not lower '" + inputFile + "' to native code (see the diagnostics above)");
  if (tilings && timer.print)
    ::het::compile::reportTilings(*tilings, tuningDb, inputFile);
  if (!gpuTargetLabel.empty())
    addGpuTargetGlobal(module, gpuTargetLabel);
  SmallVector<std::string> counts;
  auto functions = module->getAttrOfType<IntegerAttr>("hetrt.outlined_functions");
  auto calls = module->getAttrOfType<IntegerAttr>("hetrt.outlined_calls");
  if (functions && calls)
    counts.push_back(llvm::formatv("{0} layer runs outlined as calls to {1} distinct functions",
                                   calls.getInt(), functions.getInt()));
  if (auto loops = module->getAttrOfType<IntegerAttr>("hetrt.parallel_loops"))
    counts.push_back(llvm::formatv("{0} loop nests on threads", loops.getInt()));
  timer.done("lower to LLVM dialect" +
             (counts.empty() ? std::string() : " (" + llvm::join(counts, "; ") + ")"));

  if (emitKind == Emit::Mlir) {
    auto out = openOutputFile(output, &errorMessage);
    if (!out)
      return fail(errorMessage);
    module->print(out->os());
    out->keep();
    return 0;
  }

  // LLVM IR for the target machine.
  llvm::Expected<::het::target::NativeTarget> native = ::het::target::hostTarget(mcpu, optLevel);
  if (!native)
    return fail(llvm::toString(native.takeError()));
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      ::het::target::createTargetMachine(*native);
  if (!machine)
    return fail(llvm::toString(machine.takeError()));
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return fail("could not translate the LLVM dialect to LLVM IR");
  ::het::target::prepareModule(*llvmModule, **machine);
  if (llvm::verifyModule(*llvmModule, &llvm::errs()))
    return fail("internal error: the generated LLVM IR does not verify");
  timer.done("translate to LLVM IR");

  if (emitKind == Emit::Llvm) {
    ::het::target::optimizeModule(*llvmModule, **machine, optLevel);
    timer.done("optimize LLVM IR");
    auto out = openOutputFile(output, &errorMessage);
    if (!out)
      return fail(errorMessage);
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return 0;
  }

  // Object code: one unit per large function, optimised and emitted on
  // --jobs threads, each unit's object from the cache when it has one.
  llvm::SmallString<128> scratch;
  if (auto error = llvm::sys::fs::createUniqueDirectory("het-compile", scratch))
    return fail("cannot create a temporary directory: " + error.message());
  auto removeScratch = llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(scratch); });
  ::het::target::ParallelCodegenOptions codegen;
  codegen.jobs = jobs;
  if (!noCache)
    codegen.cacheDirectory = cacheDirectory.getNumOccurrences()
                                 ? cacheDirectory.getValue()
                                 : ::het::target::defaultCacheDirectory();
  ::het::target::ParallelCodegenReport report;
  llvm::Expected<std::vector<std::string>> objects = ::het::target::emitObjectsInParallel(
      *llvmModule, *native, codegen, scratch.str().str(), report);
  if (!objects)
    return fail("code generation failed: " + llvm::toString(objects.takeError()));
  if (!report.cacheProblem.empty())
    llvm::errs() << "het-compile: warning: object cache not used (" << report.cacheProblem
                 << ")\n";
  timer.done(llvm::formatv("optimize and emit object code ({0} functions in {1} units on {2} "
                           "threads, {3} units from the cache)",
                           report.functions, report.units, report.threads, report.fromCache)
                 .str());

  llvm::Expected<std::string> driver = findLinkerDriver();
  if (!driver)
    return fail(llvm::toString(driver.takeError()));
  if (emitKind == Emit::Obj) {
    // One relocatable object of all units.
    llvm::SmallVector<llvm::StringRef> command{*driver, "-r", "-nostdlib", "-o", output};
    for (const std::string &object : *objects)
      command.push_back(object);
    std::string linkError;
    if (llvm::sys::ExecuteAndWait(*driver, command, std::nullopt, {}, 0, 0, &linkError) != 0)
      return fail("combining the objects with " + *driver + " failed" +
                  (linkError.empty() ? "" : ": " + linkError));
    return 0;
  }

  // Link with the system compiler driver against libhetrt.
  std::string runtime = runtimeDir;
  if (runtime.empty()) {
    ::het::InstalledPath library{"HET_RUNTIME_DIR", ::het::libraryDirectoryBelowPrefix(),
                                 "libhetrt.so", "the runtime library"};
    std::vector<std::string> tried;
    runtime = ::het::locate(library, &tried);
    if (runtime.empty())
      return fail(::het::whyNotFound(library, tried) + " (or pass --runtime-dir)");
  }
  llvm::SmallString<256> runtimeLibrary(runtime);
  llvm::sys::path::append(runtimeLibrary, "libhetrt.so");
  if (!llvm::sys::fs::exists(runtimeLibrary))
    return fail("the runtime library " + runtimeLibrary + " does not exist (build het, or "
                "pass --runtime-dir)");
  // The executable finds libhetrt where it was linked against; an installed
  // tree that moves afterwards needs its executables relinked (or
  // LD_LIBRARY_PATH).
  std::string rpath = "-Wl,-rpath," + runtime;
  std::string libraryPath = "-L" + runtime;
  // -rdynamic: a pipeline's runtime finds the stage functions by name.
  llvm::SmallVector<llvm::StringRef> command{*driver};
  for (const std::string &object : *objects)
    command.push_back(object);
  for (llvm::StringRef argument : {llvm::StringRef("-o"), llvm::StringRef(output),
                                   llvm::StringRef(libraryPath), llvm::StringRef(rpath),
                                   llvm::StringRef("-lhetrt"), llvm::StringRef("-lmvec"),
                                   llvm::StringRef("-lm"),
                                   llvm::StringRef("-rdynamic")})
    command.push_back(argument);
  std::string linkError;
  int status = llvm::sys::ExecuteAndWait(*driver, command, std::nullopt, {}, 0, 0, &linkError);
  if (status != 0)
    return fail("linking with " + *driver + " failed" +
                (linkError.empty() ? "" : ": " + linkError));
  timer.done("link");
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::het::registerHetPasses();
  mlir::het::registerHetTrainingPipeline();
  mlir::het::registerHetPartitionPasses();
  // --mlir-timing and the other pass manager options (hidden from --help;
  // for developers profiling the pipelines).
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &distributed});
  cl::ParseCommandLineOptions(
      argc, argv,
      "het-compile: compile a het model into a native training executable\n\n"
      "  het-compile model.mlir -o model && ./model --steps 100\n"
      "  het-compile model.mlir --cluster C.json --plan auto -o model && het-run -n 4 ./model\n");

  if (optLevel < '0' || optLevel > '3')
    return fail(llvm::Twine("unknown optimization level -O") + std::string(1, optLevel) +
                " (use -O0 to -O3)");
  if (precision != "fp32" && precision != "tf32" && precision != "bf16" && precision != "fp16")
    return fail("unknown --precision '" + precision + "' (use fp32, tf32, bf16 or fp16)");
  if (lossScale != "auto" && lossScale != "dynamic" && lossScale != "none")
    return fail("unknown --loss-scale '" + lossScale + "' (use dynamic or none)");
  if (!(initScale > 0) || growthInterval < 1)
    return fail("--init-scale must be positive and --growth-interval at least 1");
  if (gpuLibraries != "vendor" && gpuLibraries != "generated")
    return fail("unknown --gpu-libraries '" + gpuLibraries + "' (use vendor or generated)");
  std::optional<mlir::het::GpuTarget> gpu;
  if (target == "cuda" || target == "hip") {
    auto parsed = mlir::het::parseGpuTarget(target, gpuArch);
    if (!parsed)
      return fail(llvm::toString(parsed.takeError()));
    gpu = *parsed;
    gpu->vendorLibraries = gpuLibraries == "vendor";
    gpu->tf32 = precision == "tf32";
    bool gpuOutput = emit == Emit::GpuBinary || emit == Emit::GpuMlir;
    if (gpuEmulate && gpuOutput)
      return fail("--gpu-emulate builds a host executable; --emit=gpu-binary/gpu-mlir build "
                  "the GPU kernels themselves");
    if (!clusterFile.empty() || !planFile.empty())
      return fail("--target=" + target +
                  " compiles one training step; a pipeline (--plan/"
                  "--cluster) compiles each stage for its device group's kind (drop --target; "
                  "--gpu-emulate runs its GPU stages' kernels on the host)");
  } else if (target != "x86_64" && target != "x86-64") {
    return fail("unsupported target '" + target + "' (x86_64, cuda or hip)");
  } else if (emit == Emit::GpuBinary || emit == Emit::GpuMlir) {
    return fail("--emit=gpu-binary and gpu-mlir need --target=cuda or --target=hip");
  } else if (!gpuArch.empty()) {
    return fail("--gpu-arch needs --target=cuda or --target=hip");
  } else if (gpuEmulate && clusterFile.empty() && planFile.empty()) {
    return fail("--gpu-emulate needs --target=cuda or --target=hip (or a pipeline: --plan)");
  }
  bool buildingPipeline = !clusterFile.empty() || !planFile.empty();
  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
    return fail("unknown optimizer '" + optimizer + "' (use sgd, adam or adamw)");
  if (!(weightDecay >= 0))
    return fail("--weight-decay must be 0 or more");
  if (adamBetas.getNumOccurrences() &&
      (adamBetas.size() != 2 || llvm::any_of(adamBetas, [](double b) { return !(b >= 0 && b < 1); })))
    return fail("--betas takes two decays in [0, 1), e.g. --betas 0.9,0.95");
  if (!(adamEpsilon > 0))
    return fail("--eps must be positive");
  if (!(clipGradNorm >= 0) || !std::isfinite(clipGradNorm))
    return fail("--clip-grad-norm must be a finite norm, 0 or more (0: no clipping)");
  if (!mlir::het::parseKernelLibrary(library) || library == "cudnn")
    return fail("unknown kernel library '" + library + "' (use dnnl, reference or mlir)");
  if (!(learningRate > 0))
    return fail("--lr must be positive");
  std::string output = outputFile.empty() ? defaultOutput() : outputFile.getValue();
  StageTimer timer;

  DialectRegistry registry;
  mlir::het::registerCodegenDialects(registry);
  if (gpu || buildingPipeline) // a plan may place stages on GPUs
    mlir::het::registerGpuCodegen(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false); // messages name the op; a module dump buries them
  context.loadAllAvailableDialects();

  std::string errorMessage;
  auto file = openInputFile(inputFile, &errorMessage);
  if (!file)
    return fail(errorMessage);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("could not parse '" + inputFile + "' (see the diagnostics above)");
  timer.done("parse");
  // A model exported in a 16-bit format (python -m het.export --precision,
  // or a PyTorch model in bf16 or under autocast) states it: compile in it
  // unless --precision or --layer-precisions says otherwise.
  bool statedPrecision = false;
  for (auto function : module->getOps<func::FuncOp>()) {
    auto stated = function->getAttrOfType<StringAttr>(mlir::het::kModelPrecisionAttrName);
    if (!stated)
      continue;
    function->removeAttr(mlir::het::kModelPrecisionAttrName); // read here, nowhere else
    if (statedPrecision || precision.getNumOccurrences() || !layerPrecisions.empty())
      continue;
    statedPrecision = true;
    precision = stated.getValue().str();
    llvm::errs() << "het-compile: note: @" << function.getName() << " was exported in "
                 << stated.getValue() << " (" << mlir::het::kModelPrecisionAttrName
                 << "): compiling in it (--precision overrides)\n";
  }

  mlir::het::CpuPipelineOptions options;
  options.library = *mlir::het::parseKernelLibrary(library);
  options.fuseElementwise = optLevel != '0';
  options.outlineLayers = outlineLayers;
  options.threadedLoops = threadedLoops;
  if (!contractionTiling.empty() && !tilingEverywhere())
    return fail("--contraction-tiling '" + contractionTiling +
                "' is not 'row=d<N> rows=<N> width=<N> vectors=<N> order=rows|columns "
                "[row2=d<N> rows2=<N>] [others=inside] [rblock=<N>]'");
  options.contractionTilingEverywhere = tilingEverywhere();
  if (bf16Products != "auto" && bf16Products != "native" && bf16Products != "f32")
    return fail("unknown --bf16-products '" + bf16Products + "' (use auto, native or f32)");
  options.nativeBf16Products = bf16Products == "native";
  for (const std::string &format : layerPrecisions)
    if (format != "fp32" && format != "bf16" && format != "fp16")
      return fail("unknown format '" + format + "' in --layer-precisions (use fp32, bf16 or fp16)");
  if (!::het::plan::parseRecompute(recompute))
    return fail("unknown --recompute '" + recompute + "' (use none, selective or full)");
  for (const std::string &mode : recomputeLayers)
    if (!::het::plan::parseRecompute(mode))
      return fail("unknown mode '" + mode +
                  "' in --recompute-layers (use none, selective or full)");
  // A plan states the format each stage trains in: compile in it, and
  // refuse a plan and --precision that disagree, naming the stage.
  bool formatsFromPlan = false;
  if (!planFile.empty() && planFile != "auto") {
    try {
      ::het::partition::PartitionPlan plan = ::het::partition::readPartitionPlan(planFile);
      ::het::partition::PipelineFormats planned = ::het::partition::pipelineFormats(
          plan, precision, precision.getNumOccurrences() > 0);
      // A stage whose replicas train in different formats is built once
      // per format; what it sends leaves it in f32.
      replicaFormats = planned.replicaFormats;
      if (!planned.f32Boundaries.empty() && f32Boundaries.empty())
        for (long layer : planned.f32Boundaries)
          f32Boundaries.push_back(layer);
      if (!layerPrecisions.empty()) {
        // Given by hand (or by a re-plan's build record): the plan must agree.
        ::het::partition::PipelineFormats stated =
            ::het::partition::pipelineFormats(plan, precision, false);
        for (const auto &stage : plan.stages)
          for (long l = stage.layerBegin; l < stage.layerEnd; ++l) {
            std::string want = size_t(l) < layerPrecisions.size() ? layerPrecisions[l]
                                                                  : precision.getValue();
            std::string have = size_t(l) < stated.layers.size() ? stated.layers[l]
                                                                 : stated.precision;
            if (have != want && have != precision)
              return fail(planFile + ": stage " + stage.name + " trains layer " +
                          std::to_string(l) + " in " + have + " by the plan, but "
                          "--layer-precisions asks for " + want);
          }
      } else if (planned.precision != precision || !planned.layers.empty()) {
        std::string described = planned.precision;
        if (!planned.layers.empty()) {
          described.clear();
          for (const std::string &f : planned.layers)
            described += (described.empty() ? "" : ",") + f;
          described = "layer by layer " + described;
          layerPrecisions.clear();
          for (const std::string &f : planned.layers)
            layerPrecisions.push_back(f);
        }
        llvm::errs() << "het-compile: note: " << planFile << " trains its stages in "
                     << described << ": compiling so"
                     << (planned.precision == "fp16" ||
                                 llvm::is_contained(planned.layers, "fp16") ||
                                 usesFormat("fp16")
                             ? ", with loss scaling decided by every rank together"
                             : "")
                     << "\n";
        for (size_t j = 0; j < planned.replicaFormats.size(); ++j) {
          std::vector<std::string> formats;
          for (const std::string &f : planned.replicaFormats[j])
            if (!llvm::is_contained(formats, f))
              formats.push_back(f);
          if (!formats.empty())
            llvm::errs() << "het-compile: note: stage " << plan.stages[j].name
                         << "'s replicas train in " << llvm::join(formats, " and ")
                         << ": it is built once per format, and what it sends leaves it in "
                            "f32\n";
        }
        precision = planned.precision;
        formatsFromPlan = true;
      }
      // Activation recomputation the plan chose per stage (het-plan
      // --recompute), unless given here layer by layer.
      bool recomputes = llvm::any_of(plan.stages, [](const auto &stage) {
        return stage.recompute != "none";
      });
      if (recomputes && recomputeLayers.empty()) {
        std::vector<std::string> modes;
        for (const auto &stage : plan.stages) {
          if (modes.size() < size_t(stage.layerEnd))
            modes.resize(stage.layerEnd, recompute.getValue());
          for (long l = stage.layerBegin; l < stage.layerEnd; ++l)
            modes[l] = stage.recompute;
        }
        for (const std::string &mode : modes)
          recomputeLayers.push_back(mode);
        llvm::errs() << "het-compile: note: " << planFile
                     << " recomputes activations by stage: layer by layer "
                     << llvm::join(recomputeLayers, ",") << "\n";
      }
    } catch (const ::het::plan::PlanError &e) {
      return fail(e.what());
    }
  }
  if (usesFormat("bf16") && target == "x86_64") {
    // Two kinds of bf16 products, each on its own unit: oneDNN's kernels
    // (AMX tiles where the core has them, else vdpbf16ps) and the generated
    // contractions of --library=mlir and cpu.mlir stages (vdpbf16ps,
    // het-tile-contractions). --bf16-products=auto times each against f32.
    bool pipeline = !clusterFile.empty() || !planFile.empty();
    bool generated = library == "mlir" || pipeline, onednn = library == "dnnl" || pipeline;
    bool dot = ::het::support::hasBf16DotProduct();
    if (!dot && bf16Products == "native" && library == "mlir")
      return fail("--bf16-products=native with --library=mlir: this CPU has no AVX512-BF16 "
                  "dot product for the generated bf16 contractions (--bf16-products=f32 runs "
                  "them in f32 on their bf16-rounded operands)");
    options.generatedBf16Products = dot && bf16Products == "native";
    // `auto`: native where the bf16 rate beats the f32 one, else a note.
    auto decide = [](bool &native, const char *products, const char *rates, double bf16,
                     double f32) {
      native = bf16 > f32;
      if (!native)
        llvm::errs() << llvm::formatv(
            "het-compile: note: {0} run in f32 on their bf16-rounded operands: {1}, bf16 "
            "{2:f1} GFLOP/s against f32 {3:f1} (--bf16-products=native overrides)\n",
            products, rates, bf16, f32);
    };
    if (bf16Products == "auto" && generated && dot) {
      // A quarter second: bf16 dot product against f32 FMA on this core.
      ::het::support::MultiplyAddPeaks peaks = ::het::support::measureMultiplyAddPeaks(0.25);
      decide(options.generatedBf16Products, "generated bf16 products",
             "this core's dot product against its FMA", peaks.bf16Gflops, peaks.f32Gflops);
    }
    if (bf16Products == "auto" && onednn) {
      // A quarter second: oneDNN's bf16 matmul against its f32 one.
      ::het::rt::DnnlProductRates rates = ::het::rt::measureDnnlProductRates(0.25);
      decide(options.nativeBf16Products, "oneDNN's bf16 products",
             "its matmul on this core", rates.bf16Gflops, rates.f32Gflops);
    }
  }
  if (zeroStage.getNumOccurrences() && clusterFile.empty() && planFile.empty()) {
    llvm::errs() << "het-compile: error: --zero shards optimizer state over a stage's "
                    "replicas; it needs a pipeline (--cluster or --plan)\n";
    return 1;
  }
  if (!clusterFile.empty() || !planFile.empty()) {
    FailureOr<OwningOpRef<ModuleOp>> pipeline = buildForCluster(*module, timer, output);
    if (failed(pipeline))
      return 1;
    if (emit == Emit::Stages)
      return 0; // buildForCluster printed them
    options.pipeline = true;
    FailureOr<mlir::het::CpuPipelineOptions> lowering = pipelineLowering(**pipeline, options);
    if (failed(lowering))
      return 1;
    int rc = lowerAndEmit(**pipeline, *lowering, emit, output, timer);
    if (rc == 0 && emit == Emit::Exe) {
      // How to build it again for other devices (het-run --elastic).
      std::vector<std::string> args(argv, argv + argc);
      // A re-plan (--plan auto) must keep the formats the plan gave.
      if (formatsFromPlan) {
        std::string layers;
        for (const std::string &f : layerPrecisions)
          layers += (layers.empty() ? "" : ",") + f;
        if (!layers.empty())
          args.insert(args.begin() + 1, "--layer-precisions=" + layers);
        args.insert(args.begin() + 1, "--precision=" + precision.getValue());
      }
      static int anchor; // an address inside this executable
      std::string compiler = llvm::sys::fs::getMainExecutable(argv[0], &anchor);
      if (llvm::Error e = ::het::compile::writeBuildRecord(output, args, compiler, inputFile,
                                                           clusterFile, builtPlanFile)) {
        // The executable is fine; only re-planning it is not possible (and
        // an older record must not describe it).
        llvm::sys::fs::remove(output + ".build.json");
        llvm::errs() << "het-compile: warning: " << llvm::toString(std::move(e)) << "\n";
      }
    }
    return rc;
  }
  if (emit == Emit::Stages)
    return fail("--emit=stages shows a pipeline's stages: give --plan or --cluster");
  // Build the training step unless the input is already one.
  bool hasStep = false;
  for (auto function : module->getOps<func::FuncOp>())
    hasStep |= function.getName().ends_with("_train_step");
  PassManager pm(&context);
  if (failed(applyDeveloperOptions(pm)))
    return fail("bad --mlir-* pass manager option");
  if (!hasStep) {
    std::string pipeline = "het-training-pipeline{" + trainingOptions() + "}";
    if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
      return fail("internal error: bad training pipeline '" + pipeline + "'");
  }
  if (failed(runVerified(pm, *module)))
    return fail("could not build the training step of '" + inputFile +
                "' (see the diagnostics above)");
  if (gpu && gpuEmulate) {
    llvm::errs() << "het-compile: --gpu-emulate: the " << gpu->arch
                 << " kernels run on the host one block and thread after another (a "
                    "correctness harness, not a fast path)\n";
    mlir::het::CpuPipelineOptions emulation = mlir::het::gpuEmulationOptions(*gpu);
    emulation.fuseElementwise = options.fuseElementwise;
    return lowerAndEmit(*module, emulation, emit, output, timer);
  }
  if (gpu && (emit == Emit::GpuBinary || emit == Emit::GpuMlir))
    return emitGpuBinary(*module, *gpu, output, timer);
  if (gpu) {
    // An executable whose step launches the kernels on the GPU through
    // libhetrt's runtime layer (docs/gpu.md); it names its target so the
    // runtime starts the driver before the first buffer.
    mlir::het::CpuPipelineOptions executable = mlir::het::gpuExecutableOptions(*gpu);
    executable.fuseElementwise = options.fuseElementwise;
    return lowerAndEmit(*module, executable, emit, output, timer,
                        (gpu->vendor == mlir::het::GpuVendor::Nvidia ? "cuda " : "hip ") +
                            gpu->arch);
  }
  return lowerAndEmit(*module, options, emit, output, timer);
}
