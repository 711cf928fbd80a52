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

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir::het {

enum class GpuVendor { Nvidia, Amd };

/// One GPU architecture the kernels are compiled for.
struct GpuTarget {
  GpuVendor vendor = GpuVendor::Nvidia;
  std::string arch; // sm_80, sm_90, gfx90a, gfx942
  /// Threads per block of the mapped loop nests.
  int64_t blockSize = 256;
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

/// After the mapping: outlining into one gpu.module, NVVM or ROCDL, and
/// (`serialize`) gpu-module-to-binary, which leaves a gpu.binary.
void addGpuKernelPasses(OpPassManager &pm, const GpuTarget &target, bool serialize);

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
/// each) move into one `gpu.module @het_kernels`, so one code object holds
/// every kernel of the step.
std::unique_ptr<Pass> createMergeKernelModulesPass();

} // namespace mlir::het

#endif // HET_CONVERSION_GPU_H
