//===- GPU.h - lowering het training steps to GPU code objects -*- C++ -*-===//
//
// The GPU half of the code generator (docs/gpu.md): a training step is
// lowered like the CPU one to linalg with every op generated (the `mlir`
// kernel library), bufferized, its loop nests mapped onto blocks and
// threads, outlined into one gpu.module of kernels and serialized by
// MLIR's NVVM (ptxas from the CUDA toolkit) or ROCDL target into a cubin or
// an hsaco.
//
//===----------------------------------------------------------------------===//

#ifndef HET_CONVERSION_GPU_H
#define HET_CONVERSION_GPU_H

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::het {

enum class GpuVendor { Nvidia, Amd };

/// One GPU architecture the kernels are compiled for.
struct GpuTarget {
  GpuVendor vendor = GpuVendor::Nvidia;
  std::string arch; // sm_80, sm_90, gfx90a, gfx942
  /// Threads per block of the mapped loop nests.
  int64_t blockSize = 256;
  /// NVIDIA: matrix products as cuBLAS calls (het-gpu-contractions-to-cublas)
  /// and convolutions as cuDNN calls (the `cudnn` kernel library) rather
  /// than generated kernels. AMD targets always generate.
  bool vendorLibraries = true;
  /// NVIDIA with vendor libraries: f32 matrix products on the TF32 tensor
  /// cores (cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32; --precision tf32).
  bool tf32 = false;
  /// The kernel library of the front half: cudnn on NVIDIA with vendor
  /// libraries, else mlir (every op generated).
  KernelLibrary kernelLibrary() const {
    return vendor == GpuVendor::Nvidia && vendorLibraries ? KernelLibrary::Cudnn
                                                          : KernelLibrary::Mlir;
  }

  /// "cuda sm_90", "hip gfx942": the spelling of kGpuTargetAttr and of the
  /// executable's het_gpu_target.
  std::string label() const;
  /// "cuda", "hip".
  llvm::StringRef runtimeName() const;
  bool operator<(const GpuTarget &other) const {
    return std::tie(vendor, arch) < std::tie(other.vendor, other.arch);
  }
  bool operator==(const GpuTarget &other) const {
    return vendor == other.vendor && arch == other.arch;
  }
};

/// `--target=cuda|hip` with `--gpu-arch` (empty: sm_80 for cuda, gfx90a for
/// hip), or an error that names what is wrong and what is accepted.
llvm::Expected<GpuTarget> parseGpuTarget(llvm::StringRef target, llvm::StringRef arch);

/// From a training step (het-training-pipeline output) to a module whose
/// kernels are one `gpu.binary @het_kernels` for `target`: what
/// `het-compile --emit=gpu-binary` writes. Without `serialize`, the kernels
/// stay `gpu.module @het_kernels` in the target's LLVM dialect
/// (`--emit=gpu-mlir`).
void buildHetToGpuBinaryPipeline(OpPassManager &pm, const GpuTarget &target,
                                 bool serialize = true);

/// Passes that put a bufferized step's loop nests on blocks and threads
/// (after `het-gpu-check-lowerable`): shared by the code-object pipeline
/// and host emulation.
void addGpuMappingPasses(OpPassManager &pm, const GpuTarget &target);

/// After the mapping: outlining into one gpu.module per target (one for a
/// step), NVVM or ROCDL, and (`serialize`) gpu-module-to-binary, which
/// leaves a gpu.binary per module.
void addGpuKernelPasses(OpPassManager &pm, llvm::ArrayRef<GpuTarget> targets, bool serialize);

/// The CPU pipeline's options for a GPU executable: the step's loops mapped
/// and serialized after bufferization, the host code's allocations through
/// libhetrt (managed memory), launches lowered to the mgpu* calls libhetrt
/// implements.
CpuPipelineOptions gpuExecutableOptions(const GpuTarget &target);

/// The lowering options of `het-compile --target=cuda|hip --gpu-emulate`:
/// the CPU pipeline with every op generated, the GPU mapping after
/// bufferization and each launch run as loops over its blocks and threads
/// (het-gpu-launch-to-host-loops), so an ordinary executable runs the
/// very kernels a GPU build serializes.
CpuPipelineOptions gpuEmulationOptions(const GpuTarget &target);

/// The code object of the module's `gpu.binary @het_kernels` (an ELF cubin
/// or hsaco).
llvm::Expected<std::string> gpuBinaryOf(ModuleOp module);

/// The target of a device kind of the catalog (vendor "nvidia" or "amd"
/// and its architecture, as a plan's device group has them), or an error
/// saying which architectures het compiles for.
llvm::Expected<GpuTarget> gpuTargetOfKind(llvm::StringRef vendor, llvm::StringRef arch);

/// A kGpuTargetAttr value back as a target.
llvm::Expected<GpuTarget> parseGpuTargetLabel(llvm::StringRef label);

/// The functions the GPU passes map: in a module where some functions
/// carry kGpuTargetAttr (a pipeline with GPU stages), those; otherwise (a
/// single training step built for a GPU) every function with a body.
llvm::SmallVector<func::FuncOp> gpuFunctions(ModuleOp module);

/// The distinct targets of a module's kGpuTargetAttr functions, or an error
/// naming a function whose attribute is malformed.
llvm::Expected<std::vector<GpuTarget>> gpuTargetsOf(ModuleOp module);

/// The name of the gpu.module (and, serialized, the gpu.binary) holding
/// the kernels compiled for `target` when a module has kernels for
/// `targets`: `het_kernels` for one target, `het_kernels_<arch>` for several.
std::string kernelModuleName(const GpuTarget &target, llvm::ArrayRef<GpuTarget> targets);

/// The pipeline lowering of a module whose stage functions include GPU
/// ones (kGpuTargetAttr) for `targets`, from the CPU stages' `options`:
/// the GPU functions mapped onto blocks and threads, then either run on the
/// host (`emulate`, as --gpu-emulate does for a step) or outlined into one
/// code object per target and launched through libhetrt. The CPU stages'
/// functions are lowered as before.
CpuPipelineOptions gpuPipelineOptions(CpuPipelineOptions options, llvm::ArrayRef<GpuTarget> targets,
                                      bool emulate);

/// Dialects, target attributes and LLVM IR translations the GPU lowering
/// and serialization need.
void registerGpuCodegen(DialectRegistry &registry);

/// `het-gpu-check-lowerable`: after convert-het-to-linalg (library=mlir),
/// fails on every op still lowered to a host kernel of libhetrt, naming it.
std::unique_ptr<Pass> createCheckGpuLowerablePass();
/// `het-gpu-copies-to-linalg`: memref.copy of ranked buffers as
/// linalg.copy, so copies run one thread per element.
std::unique_ptr<Pass> createCopiesToLinalgPass();
/// `het-gpu-parallel-dims-first`: every linalg op's loops interchanged so
/// its parallel dimensions come before its reductions (one thread per
/// output element once mapped).
std::unique_ptr<Pass> createParallelDimsFirstPass();
/// `het-gpu-contractions-to-cublas`: in functions compiled for NVIDIA GPUs
/// (hetrt.gpu_target "cuda ...", or unmarked ones when `unmarkedNvidia`),
/// every matrix product of whole buffers (at most one batch dimension), f32
/// or bf16/f16 operands into f32, becomes a call to hetrt_cublas_sgemm
/// (hetrt_cublas_gemm_tf32 when `tf32`), hetrt_cublas_gemm_bf16 or
/// hetrt_cublas_gemm_f16.
std::unique_ptr<Pass> createContractionsToCublasPass(bool unmarkedNvidia = true,
                                                     bool tf32 = false);
/// `het-gpu-block-reductions`: a linalg reduction with few outputs and
/// many terms each becomes a kernel of one `blockSize`-thread block per
/// output, the threads' partial results combined by gpu.all_reduce (warp
/// shuffles and shared memory once lowered).
std::unique_ptr<Pass> createBlockReductionsPass(int64_t blockSize = 256);
/// `het-gpu-map-loops-to-threads`: the step's outermost parallel loops
/// tiled into blocks of up to `blockSize` threads along their innermost
/// dimensions (x along the last) and mapped onto blocks and threads.
std::unique_ptr<Pass> createMapLoopsToThreadsPass(int64_t blockSize = 256);
/// `het-gpu-wrap-host-loops`: loop nests left on the host (reductions to a
/// scalar, loops carrying a value) run as one-thread kernels, so every
/// computation touches device memory on the device.
std::unique_ptr<Pass> createWrapHostLoopsPass();
/// `het-gpu-launch-to-host-loops`: host emulation of the mapped kernels.
std::unique_ptr<Pass> createLaunchToHostLoopsPass();
/// `het-gpu-merge-kernel-modules`: the outlined kernels (one gpu.module
/// each) move into one gpu.module per target (kernelModuleName; the target
/// of the function that launches them), so one code object holds every
/// kernel of a step, or of a pipeline's stages on one architecture.
std::unique_ptr<Pass> createMergeKernelModulesPass();
/// `het-gpu-linalg-to-parallel-loops`: convert-linalg-to-parallel-loops on
/// the functions gpuFunctions selects (a CPU stage keeps its linalg ops for
/// the CPU lowering's tiling).
std::unique_ptr<Pass> createGpuLinalgToParallelLoopsPass();
/// `het-gpu-lower-kernel-modules`: each gpu.module's kernels to NVVM or
/// ROCDL (for its chip) by the target attached to it.
std::unique_ptr<Pass> createLowerKernelModulesPass();

} // namespace mlir::het

#endif // HET_CONVERSION_GPU_H
