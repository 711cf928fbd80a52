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
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::het;

namespace {

// The architectures the device catalog's GPUs have (A100; H100/H200;
// MI250X; MI300X). ptxas of CUDA 13 rejects sm_50/sm_70, and LLVM 19 knows
// no sm_100: newer NVIDIA GPUs run the PTX a fatbin embeds.
constexpr const char *kNvidiaArchs[] = {"sm_80", "sm_86", "sm_89", "sm_90"};
constexpr const char *kAmdArchs[] = {"gfx90a", "gfx942"};

template <size_t N> bool contains(const char *const (&list)[N], StringRef arch) {
  for (const char *known : list)
    if (arch == known)
      return true;
  return false;
}

template <size_t N> std::string joined(const char *const (&list)[N]) {
  std::string text;
  for (const char *known : list)
    text += (text.empty() ? "" : ", ") + std::string(known);
  return text;
}

} // namespace

llvm::Expected<GpuTarget> mlir::het::parseGpuTarget(StringRef target, StringRef arch) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  GpuTarget result;
  if (target == "cuda") {
    result.vendor = GpuVendor::Nvidia;
    result.arch = arch.empty() ? "sm_80" : arch.str();
    if (!contains(kNvidiaArchs, result.arch))
      return error("--gpu-arch=" + result.arch + " is not an NVIDIA architecture het compiles for (" +
                   joined(kNvidiaArchs) + ")");
    return result;
  }
  if (target == "hip") {
    result.vendor = GpuVendor::Amd;
    result.arch = arch.empty() ? "gfx90a" : arch.str();
    if (!contains(kAmdArchs, result.arch))
      return error("--gpu-arch=" + result.arch + " is not an AMD architecture het compiles for (" +
                   joined(kAmdArchs) + ")");
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
