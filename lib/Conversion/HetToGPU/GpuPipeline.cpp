//===- GpuPipeline.cpp - from a training step to a GPU code object ---------===//
//
// The CPU front half (het -> linalg with every op generated, fusion,
// bufferization), then upstream MLIR: linalg to parallel loops, tiled by the
// block size and mapped onto blocks and threads (gpu-map-parallel-loops,
// convert-parallel-loops-to-gpu); what stays on the host runs as one-thread
// kernels (het-gpu-wrap-host-loops); outlining, one gpu.module for all
// kernels (het-gpu-merge-kernel-modules), NVVM or ROCDL, and
// gpu-module-to-binary (ptxas for a cubin; lld and the ROCm device
// libraries, arranged as a toolkit folder at configure time, for an hsaco).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"
#include "het/Conversion/Passes.h"
#include "het/Support/InstallLayout.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::het;

/// The toolkit folder MLIR's ROCDL serializer expects (llvm/bin/ld.lld,
/// amdgcn/bitcode): $HET_ROCM_TOOLKIT_DIR, else the one installed beside
/// het-compile (lib/het/rocm-toolkit). The serializer checks it is there,
/// so its error names the place.
static std::string rocmToolkitDirectory() {
  return ::het::expectedPlace({"HET_ROCM_TOOLKIT_DIR", HET_ROCM_TOOLKIT_BELOW_PREFIX,
                               "llvm/bin/ld.lld", "the ROCm toolkit folder"});
}

void mlir::het::addGpuMappingPasses(OpPassManager &pm, const GpuTarget &target) {
  pm.addPass(createCheckGpuLowerablePass());
  pm.addPass(createCopiesToLinalgPass());
  if (target.vendorLibraries)
    pm.addPass(createContractionsToCublasPass(target.vendor == GpuVendor::Nvidia, target.tf32));
  pm.addPass(createBlockReductionsPass(target.blockSize));
  pm.addPass(createParallelDimsFirstPass());
  pm.addPass(createGpuLinalgToParallelLoopsPass());
  pm.addPass(createMapLoopsToThreadsPass(target.blockSize));
  pm.addPass(createParallelLoopToGpuPass());
  pm.addPass(createWrapHostLoopsPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {
/// A single training step built for a GPU: every function is the GPU's
/// (the mapping passes expect the step's loops in the step itself, so no
/// outlined layers; results stay copies made by kernels; host loops stay as
/// the mapping left them).
CpuPipelineOptions gpuStepOptions(const GpuTarget &target) {
  CpuPipelineOptions options;
  options.library = target.kernelLibrary();
  options.outlineLayers = false;
  options.elideOutParamCopies = false;
  options.threadedLoops = false;
  options.splitInnermostReductions = false;
  return options;
}
} // namespace

CpuPipelineOptions mlir::het::gpuEmulationOptions(const GpuTarget &target) {
  return gpuPipelineOptions(gpuStepOptions(target), {target}, /*emulate=*/true);
}

void mlir::het::buildHetToGpuBinaryPipeline(OpPassManager &pm, const GpuTarget &target,
                                            bool serialize) {
  buildHetToBuffersPipeline(pm, gpuStepOptions(target));
  addGpuMappingPasses(pm, target);
  addGpuKernelPasses(pm, {target}, serialize);
}

CpuPipelineOptions mlir::het::gpuExecutableOptions(const GpuTarget &target) {
  return gpuPipelineOptions(gpuStepOptions(target), {target}, /*emulate=*/false);
}

void mlir::het::addGpuKernelPasses(OpPassManager &pm, ArrayRef<GpuTarget> targets, bool serialize) {
  // Kernels into one module per target, lowered for it.
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createMergeKernelModulesPass());
  // Only the kernels: the host code goes on with the CPU lowering.
  pm.addNestedPass<gpu::GPUModuleOp>(createLowerAffinePass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertSCFToCFPass());
  pm.addNestedPass<gpu::GPUModuleOp>(memref::createExpandStridedMetadataPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createLowerAffinePass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "bin"; // the ELF code object itself
  for (const GpuTarget &target : targets) {
    // The module's name matched whole (het_kernels would match
    // het_kernels_sm_90 as a search).
    std::string matcher = "^" + kernelModuleName(target, targets) + "$";
    if (target.vendor == GpuVendor::Nvidia) {
      GpuNVVMAttachTargetOptions attach;
      attach.moduleMatcher = matcher;
      attach.chip = target.arch;
      attach.features = "+ptx80"; // sm_90 needs PTX ISA >= 7.8
      attach.optLevel = 3;
      pm.addPass(createGpuNVVMAttachTarget(attach));
      // ptxas and libdevice (the math functions) of the CUDA toolkit:
      // $CUDA_HOME, else the one found at configure time.
      const char *cudaHome = std::getenv("CUDA_HOME");
      binary.toolkitPath = cudaHome && *cudaHome ? cudaHome : HET_CUDA_TOOLKIT_DIR;
    } else {
      GpuROCDLAttachTargetOptions attach;
      attach.moduleMatcher = matcher;
      attach.chip = target.arch;
      attach.optLevel = 3;
      pm.addPass(createGpuROCDLAttachTarget(attach));
      binary.toolkitPath = rocmToolkitDirectory();
    }
  }
  pm.addPass(createLowerKernelModulesPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  if (serialize)
    pm.addPass(createGpuModuleToBinaryPass(binary));
}

CpuPipelineOptions mlir::het::gpuPipelineOptions(CpuPipelineOptions options,
                                                 ArrayRef<GpuTarget> targets, bool emulate) {
  // Every target maps with the same block size, so the first one's mapping
  // serves all.
  GpuTarget mapping = targets.front();
  // Reductions are mapped onto blocks (BlockReductions.cpp), not split.
  options.splitInnermostReductions = false;
  if (emulate) {
    options.afterBufferization = [mapping](OpPassManager &pm) {
      addGpuMappingPasses(pm, mapping);
      pm.addPass(createLaunchToHostLoopsPass());
      pm.addPass(createCanonicalizerPass());
    };
    return options;
  }
  // For the whole module (a pipeline's CPU stages too: their buffers come
  // from libhetrt, host memory on ranks that start no driver). Kernels are
  // mapped after deallocation, which knows no GPU launch, and a buffer freed
  // at its last host use could still be read by a launch in flight: the
  // ownership-based deallocation. Every buffer the host code allocates must
  // be usable by the kernels: libhetrt's _mlir_memref_to_llvm_alloc gives
  // managed memory.
  options.freeAtLastUse = false;
  options.genericAllocation = true;
  std::vector<GpuTarget> all(targets.begin(), targets.end());
  options.afterDeallocation = [mapping, all](OpPassManager &pm) {
    addGpuMappingPasses(pm, mapping);
    addGpuKernelPasses(pm, all, /*serialize=*/true);
  };
  // gpu.launch_func to the mgpu* calls libhetrt implements (module loaded
  // once, kernels looked up once: lib/Runtime/Gpu/MgpuEntryPoints.cpp).
  options.beforeFinalization = [](OpPassManager &pm) {
    pm.addPass(createGpuToLLVMConversionPass());
  };
  return options;
}
