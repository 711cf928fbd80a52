//===- GpuTarget.cpp - GPU architectures and what serializing needs --------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::het;

namespace {

// The architectures of the device catalog's GPUs (A100; H100/H200;
// MI250X; MI300X) and NVIDIA's consumer parts. ptxas of CUDA 13 rejects
// sm_50/sm_70, and LLVM 19 knows no sm_100: newer NVIDIA GPUs would run the
// PTX a fatbin embeds.
struct VendorTarget {
  StringRef target, vendorName;
  GpuVendor vendor;
  SmallVector<StringRef> archs; // the first is the default
};

SmallVector<VendorTarget> vendorTargets() {
  return {{"cuda", "NVIDIA", GpuVendor::Nvidia, {"sm_80", "sm_86", "sm_89", "sm_90"}},
          {"hip", "AMD", GpuVendor::Amd, {"gfx90a", "gfx942"}}};
}

} // namespace

llvm::Expected<GpuTarget> mlir::het::parseGpuTarget(StringRef target, StringRef arch) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  for (const VendorTarget &known : vendorTargets()) {
    if (known.target != target)
      continue;
    GpuTarget result;
    result.vendor = known.vendor;
    result.arch = arch.empty() ? known.archs.front().str() : arch.str();
    if (!llvm::is_contained(known.archs, StringRef(result.arch)))
      return error("--gpu-arch=" + result.arch + " is not an " + known.vendorName +
                   " architecture het compiles for (" + llvm::join(known.archs, ", ") + ")");
    return result;
  }
  return error("--target=" + target + " is not a GPU target (cuda or hip)");
}

void mlir::het::registerGpuCodegen(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, ROCDL::ROCDLDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  // gpu.binary + gpu.launch_func to LLVM IR: the code object embedded as a
  // global, launches as mgpu* calls (#gpu.select_object, the default).
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
}

llvm::Expected<std::string> mlir::het::gpuBinaryOf(ModuleOp module) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  auto binary = module.lookupSymbol<gpu::BinaryOp>("het_kernels");
  if (!binary)
    return error("the lowering made no gpu.binary @het_kernels (a step without kernels?)");
  ArrayRef<Attribute> objects = binary.getObjects().getValue();
  if (objects.size() != 1)
    return error("gpu.binary @het_kernels holds " + llvm::Twine(objects.size()) +
                 " code objects, expected one");
  auto object = cast<gpu::ObjectAttr>(objects.front());
  return object.getObject().getValue().str();
}
