//===- GpuTarget.cpp - what GPU lowering and serializing need -------------===//

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

using namespace mlir;
using namespace mlir::het;

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
