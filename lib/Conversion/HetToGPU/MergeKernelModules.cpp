//===- MergeKernelModules.cpp - one gpu.module for every kernel ------------===//
//
// gpu-kernel-outlining puts each kernel into a gpu.module of its own, so
// serialization would make one code object per kernel. The runtime loads
// one module per step (docs/gpu.md), so the kernels move into
// `gpu.module @het_kernels` and the launches are renamed to match.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kModuleName = "het_kernels";

struct MergeKernelModulesPass
    : public PassWrapper<MergeKernelModulesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeKernelModulesPass)
  StringRef getArgument() const override { return "het-gpu-merge-kernel-modules"; }
  StringRef getDescription() const override {
    return "Move every outlined kernel into one gpu.module @het_kernels";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.empty())
      return;
    if (module.lookupSymbol(kModuleName)) {
      module.emitError("het-gpu-merge-kernel-modules: the module already has a symbol @")
          << kModuleName;
      return signalPassFailure();
    }
    OpBuilder b(kernels.front());
    auto merged = b.create<gpu::GPUModuleOp>(module.getLoc(), kModuleName);
    // Outlining names every kernel after its function (`<f>_kernel`) inside
    // a module of a unique name; in the merged module a symbol is named
    // after its old module (the kernel) or prefixed by it (anything else).
    llvm::StringMap<std::string> renamed; // "<module>::<symbol>" -> new name
    SymbolTable mergedSymbols(merged);
    for (gpu::GPUModuleOp kernel : kernels) {
      StringRef moduleName = kernel.getName();
      for (Operation &op : llvm::make_early_inc_range(kernel.getBody()->getOperations())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol)
          continue;
        std::string name = isa<gpu::GPUFuncOp>(op) ? moduleName.str()
                                                   : (moduleName + "_" + symbol.getName()).str();
        if (mergedSymbols.lookup(name)) {
          kernel.emitError("het-gpu-merge-kernel-modules: two kernels would be named @") << name;
          return signalPassFailure();
        }
        renamed[(moduleName + "::" + symbol.getName()).str()] = name;
        if (failed(SymbolTable::replaceAllSymbolUses(&op, b.getStringAttr(name), kernel)))
          return signalPassFailure();
        symbol.setName(name);
        op.moveBefore(merged.getBody()->getTerminator());
        mergedSymbols.insert(&op);
      }
    }
    bool missing = false;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = renamed.find((launch.getKernelModuleName().getValue() + "::" +
                              launch.getKernelName().getValue()).str());
      if (it == renamed.end()) {
        launch.emitError("het-gpu-merge-kernel-modules: launches an unknown kernel");
        missing = true;
        return;
      }
      launch.setKernelAttr(SymbolRefAttr::get(b.getStringAttr(kModuleName),
                                              {FlatSymbolRefAttr::get(b.getContext(), it->second)}));
    });
    if (missing)
      return signalPassFailure();
    for (gpu::GPUModuleOp kernel : kernels)
      kernel.erase();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createMergeKernelModulesPass() {
  return std::make_unique<MergeKernelModulesPass>();
}
