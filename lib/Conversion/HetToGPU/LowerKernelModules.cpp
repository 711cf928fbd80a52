//===- LowerKernelModules.cpp - each kernel module for its own target ------===//
//
// A pipeline whose GPU stages sit on different architectures (an A100
// stage and an H100 one, or NVIDIA and AMD) has one gpu.module of kernels
// per target (het-gpu-merge-kernel-modules), each with its target attached.
// Each module's gpu ops are lowered by that target's conversion: NVVM for
// #nvvm.target, ROCDL for #rocdl.target with its chip (the chipset decides
// which intrinsics ROCDL may use).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace {

struct LowerKernelModulesPass
    : public PassWrapper<LowerKernelModulesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerKernelModulesPass)
  StringRef getArgument() const override { return "het-gpu-lower-kernel-modules"; }
  StringRef getDescription() const override {
    return "Lower each gpu.module's kernels to NVVM or ROCDL by its attached target";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, NVVM::NVVMDialect, ROCDL::ROCDLDialect>();
  }
  void runOnOperation() override {
    for (auto kernels : getOperation().getOps<gpu::GPUModuleOp>()) {
      ArrayAttr targets = kernels.getTargetsAttr();
      if (!targets || targets.size() != 1) {
        kernels.emitError("het-gpu-lower-kernel-modules: @")
            << kernels.getName() << " needs exactly one target attached";
        return signalPassFailure();
      }
      OpPassManager lowering(gpu::GPUModuleOp::getOperationName());
      if (isa<NVVM::NVVMTargetAttr>(targets[0])) {
        lowering.addPass(createConvertGpuOpsToNVVMOps());
      } else if (auto rocdl = dyn_cast<ROCDL::ROCDLTargetAttr>(targets[0])) {
        lowering.addPass(createLowerGpuOpsToROCDLOpsPass(rocdl.getChip().str()));
      } else {
        kernels.emitError("het-gpu-lower-kernel-modules: @")
            << kernels.getName() << "'s target " << targets[0] << " is neither NVVM nor ROCDL";
        return signalPassFailure();
      }
      if (failed(runPipeline(lowering, kernels)))
        return signalPassFailure();
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createLowerKernelModulesPass() {
  return std::make_unique<LowerKernelModulesPass>();
}
