//===- ElideOutParamCopies.cpp - compute results in their out-parameters --===//
//
// After buffer-results-to-out-params a function whose result is produced by
// a call (an outlined layer writing its own out-parameter) ends with
//
//   %tmp = memref.alloc()            call @layer(..., %tmp)
//   memref.copy %tmp, %out           // %out: this function's out-parameter
//
// -- one allocation and one copy per result per step; for an Adam step,
// three copies of every parameter-sized tensor. When the copy is the last
// use of %tmp and the only use of %out, %tmp is replaced by %out: the
// result is computed where it is returned. Out-parameters never alias
// inputs (libhetrt passes fresh output buffers: lib/Runtime/Main.cpp,
// PipelineMain.cpp), so writing them early changes no value read.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

struct ElideOutParamCopiesPass
    : public PassWrapper<ElideOutParamCopiesPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ElideOutParamCopiesPass)

  StringRef getArgument() const override { return "het-elide-out-param-copies"; }
  StringRef getDescription() const override {
    return "Compute a function's results in its out-parameters instead of copying them "
           "there at the end";
  }

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    // A GPU stage's results stay copies made by kernels (as in a GPU step).
    if (function.isExternal() || function->hasAttr(het::kGpuTargetAttr))
      return;
    Block &entry = function.getBody().front();
    SmallVector<memref::CopyOp> copies;
    for (auto copy : entry.getOps<memref::CopyOp>())
      copies.push_back(copy);
    for (memref::CopyOp copy : copies) {
      auto out = dyn_cast<BlockArgument>(copy.getTarget());
      auto alloc = copy.getSource().getDefiningOp<memref::AllocOp>();
      if (!out || out.getOwner() != &entry || !out.hasOneUse() || !alloc ||
          alloc->getBlock() != &entry || alloc.getType() != out.getType())
        continue;
      bool lastUse = llvm::all_of(alloc->getUses(), [&](OpOperand &use) {
        Operation *user = entry.findAncestorOpInBlock(*use.getOwner());
        return user == copy || (user && user->isBeforeInBlock(copy));
      });
      if (!lastUse)
        continue;
      copy.erase();
      alloc.getResult().replaceAllUsesWith(out);
      alloc.erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createElideOutParamCopiesPass() {
  return std::make_unique<ElideOutParamCopiesPass>();
}

namespace mlir::het {
void registerElideOutParamCopiesPass() { PassRegistration<ElideOutParamCopiesPass>(); }
} // namespace mlir::het
