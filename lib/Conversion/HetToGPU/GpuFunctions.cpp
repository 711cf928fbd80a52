//===- GpuFunctions.cpp - which functions of a module run on a GPU --------===//
//
// A training step built for a GPU maps every function onto blocks and
// threads. A pipeline's module holds the stage functions of every device
// kind in its plan: those of stages placed on a GPU carry hetrt.gpu_target
// ("cuda sm_90", set by convert-het-to-runtime) and only they are mapped;
// the CPU stages' functions keep their linalg ops for the CPU lowering
// (oneDNN calls, register-tiled contractions, threaded loops).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace mlir;
using namespace mlir::het;

SmallVector<func::FuncOp> mlir::het::gpuFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> all, marked;
  for (auto function : module.getOps<func::FuncOp>()) {
    if (function.isExternal())
      continue;
    all.push_back(function);
    if (function->hasAttr(kGpuTargetAttr))
      marked.push_back(function);
  }
  return marked.empty() ? all : marked;
}

llvm::Expected<std::vector<GpuTarget>> mlir::het::gpuTargetsOf(ModuleOp module) {
  std::set<GpuTarget> targets;
  for (auto function : module.getOps<func::FuncOp>()) {
    Attribute attr = function->getAttr(kGpuTargetAttr);
    if (!attr)
      continue;
    auto label = dyn_cast<StringAttr>(attr);
    llvm::Expected<GpuTarget> target =
        label ? parseGpuTargetLabel(label.getValue())
              : llvm::createStringError(llvm::inconvertibleErrorCode(), "not a string");
    if (!target)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "@" + function.getName() + "'s " + kGpuTargetAttr + ": " +
                                         llvm::toString(target.takeError()));
    targets.insert(*target);
  }
  return std::vector<GpuTarget>(targets.begin(), targets.end());
}

std::string mlir::het::kernelModuleName(const GpuTarget &target, ArrayRef<GpuTarget> targets) {
  return targets.size() <= 1 ? std::string("het_kernels") : "het_kernels_" + target.arch;
}

namespace {

struct GpuLinalgToParallelLoopsPass
    : public PassWrapper<GpuLinalgToParallelLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuLinalgToParallelLoopsPass)
  StringRef getArgument() const override { return "het-gpu-linalg-to-parallel-loops"; }
  StringRef getDescription() const override {
    return "convert-linalg-to-parallel-loops on the functions that run on a GPU";
  }
  GpuLinalgToParallelLoopsPass() : loops(func::FuncOp::getOperationName()) {
    loops.addPass(createConvertLinalgToParallelLoopsPass());
  }
  GpuLinalgToParallelLoopsPass(const GpuLinalgToParallelLoopsPass &other)
      : PassWrapper(other), loops(other.loops) {}
  void getDependentDialects(DialectRegistry &registry) const override {
    loops.getDependentDialects(registry);
  }
  void runOnOperation() override {
    for (func::FuncOp function : gpuFunctions(getOperation()))
      if (failed(runPipeline(loops, function)))
        return signalPassFailure();
  }
  OpPassManager loops;
};

} // namespace

std::unique_ptr<Pass> mlir::het::createGpuLinalgToParallelLoopsPass() {
  return std::make_unique<GpuLinalgToParallelLoopsPass>();
}
