//===- MergeKernelModules.cpp - one gpu.module per target ------------------===//
//
// gpu-kernel-outlining puts each kernel into a gpu.module of its own, so
// serialization would make one code object per kernel. The runtime loads
// each code object once per process (docs/gpu.md), so the kernels move into
// one gpu.module per target -- `gpu.module @het_kernels` for a step or a
// pipeline whose GPU stages share an architecture, `@het_kernels_<arch>`
// each when they do not -- and the launches are renamed to match. A
// kernel's target is that of the function launching it (hetrt.gpu_target).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/StringMap.h"

#include <map>

using namespace mlir;
using namespace mlir::het;

namespace {

struct MergeKernelModulesPass
    : public PassWrapper<MergeKernelModulesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeKernelModulesPass)
  StringRef getArgument() const override { return "het-gpu-merge-kernel-modules"; }
  StringRef getDescription() const override {
    return "Move the outlined kernels into one gpu.module per target";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.empty())
      return;
    llvm::Expected<std::vector<GpuTarget>> targets = gpuTargetsOf(module);
    if (!targets) {
      module.emitError("het-gpu-merge-kernel-modules: ") << llvm::toString(targets.takeError());
      return signalPassFailure();
    }
    // Each outlined module's merged module: by the launching function's
    // target (a step without targets: all into @het_kernels).
    std::map<std::string, std::string> destination; // outlined module -> merged name
    bool mixed = false;
    module.walk([&](gpu::LaunchFuncOp launch) {
      std::string name = "het_kernels";
      auto function = launch->getParentOfType<func::FuncOp>();
      if (auto label =
              function ? function->getAttrOfType<StringAttr>(kGpuTargetAttr) : StringAttr()) {
        llvm::Expected<GpuTarget> target = parseGpuTargetLabel(label.getValue());
        if (!target) {
          llvm::consumeError(target.takeError()); // gpuTargetsOf checked every label
          return;
        }
        name = kernelModuleName(*target, *targets);
      }
      auto [it, inserted] =
          destination.emplace(launch.getKernelModuleName().getValue().str(), name);
      if (!inserted && it->second != name) {
        launch.emitError("het-gpu-merge-kernel-modules: kernel @")
            << launch.getKernelModuleName() << " is launched for two targets";
        mixed = true;
      }
    });
    if (mixed)
      return signalPassFailure();
    OpBuilder b(kernels.front());
    std::map<std::string, gpu::GPUModuleOp> merged;
    auto mergedModule = [&](const std::string &name) -> FailureOr<gpu::GPUModuleOp> {
      auto &slot = merged[name];
      if (!slot) {
        if (module.lookupSymbol(name)) {
          module.emitError("het-gpu-merge-kernel-modules: the module already has a symbol @")
              << name;
          return failure();
        }
        slot = b.create<gpu::GPUModuleOp>(module.getLoc(), name);
      }
      return slot;
    };
    // Outlining names every kernel after its function (`<f>_kernel`) inside
    // a module of a unique name; in the merged module a symbol is named
    // after its old module (the kernel) or prefixed by it (anything else).
    llvm::StringMap<std::pair<std::string, std::string>> renamed; // "<module>::<symbol>" ->
                                                                  // (module, new name)
    for (gpu::GPUModuleOp kernel : kernels) {
      StringRef moduleName = kernel.getName();
      auto where = destination.find(moduleName.str());
      FailureOr<gpu::GPUModuleOp> into =
          mergedModule(where == destination.end() ? "het_kernels" : where->second);
      if (failed(into))
        return signalPassFailure();
      SymbolTable mergedSymbols(*into);
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
        renamed[(moduleName + "::" + symbol.getName()).str()] = {into->getName().str(), name};
        if (failed(SymbolTable::replaceAllSymbolUses(&op, b.getStringAttr(name), kernel)))
          return signalPassFailure();
        symbol.setName(name);
        op.moveBefore(into->getBody()->getTerminator());
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
      launch.setKernelAttr(
          SymbolRefAttr::get(b.getStringAttr(it->second.first),
                             {FlatSymbolRefAttr::get(b.getContext(), it->second.second)}));
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
