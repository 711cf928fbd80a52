//===- FreeAtLastUse.cpp - free each buffer right after its last use ------===//
//
// MLIR's ownership-based deallocation frees a function's buffers at the end
// of the block that made them, and its simplification compares every pair
// of buffers a dealloc names: a training step then holds every temporary
// until it returns (peak memory is the sum of all of them), and lowering a
// 48-block model spent most of its time in that pairwise comparison.
//
// het's buffers are simpler than what that pass is built for: after
// one-shot bufferization with results as out-parameters, a buffer is made
// by memref.alloc, seen through views (subview, reshapes, casts), read and
// written by ops and calls that keep no reference, and its address handed
// to libhetrt through memref.extract_aligned_pointer_as_index stored into
// a call's argument table. For such a buffer the last use of it, of any of
// its views and of any value derived from its address is a safe place to
// free it; that is found in one walk. (A call marked kRetainsBuffersAttr --
// a pipeline's receive -- keeps an address beyond its return; its buffers
// live to the end of their block.) A module where some buffer does
// anything else -- flows through a loop's iteration arguments, a select, a
// call result -- is handed to the ownership-based pipeline whole.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace {

/// Where `alloc` can be freed: the last op of its block that uses it, a
/// view of it, or a value derived from its address; nullptr when the
/// buffer escapes in a way this analysis does not follow.
FailureOr<Operation *> lastUseOf(memref::AllocOp alloc) {
  Block *block = alloc->getBlock();
  Operation *last = alloc;
  llvm::SetVector<Value> values; // views of the buffer and values holding its address
  values.insert(alloc.getResult());
  for (unsigned i = 0; i < values.size(); ++i) {
    Value value = values[i];
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        return failure(); // used outside the block that made it
      if (last->isBeforeInBlock(ancestor))
        last = ancestor;
      // A call that keeps the address (a receive: libhetrt fills the buffer
      // at the phase's last receive, lib/Runtime/PipelineComm.cpp) may write
      // it after its last use here.
      if (user->hasAttr(het::kRetainsBuffersAttr) && block->mightHaveTerminator())
        last = block->getTerminator();
      if (user->hasTrait<OpTrait::IsTerminator>())
        return failure(); // yielded out of a region or returned
      if (isa<memref::DeallocOp>(user))
        return failure(); // already managed by someone else
      // The address as a number: whatever is computed from it, and any
      // table it is stored into, keeps the buffer alive.
      if (auto store = dyn_cast<memref::StoreOp>(user)) {
        if (store.getValueToStore() == value)
          values.insert(store.getMemRef());
        continue;
      }
      bool viewOfValue = false;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        viewOfValue = view.getViewSource() == value;
      for (Value result : user->getResults()) {
        if (isa<BaseMemRefType>(result.getType()) && !viewOfValue &&
            !isa<memref::ExtractStridedMetadataOp>(user))
          return failure(); // a memref that may alias this one by other means
        values.insert(result);
      }
    }
  }
  return last;
}

struct FreeAtLastUsePass : public PassWrapper<FreeAtLastUsePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FreeAtLastUsePass)

  StringRef getArgument() const override { return "het-free-at-last-use"; }
  StringRef getDescription() const override {
    return "Free every buffer right after its last use (falls back to MLIR's "
           "ownership-based deallocation for a module whose buffers escape)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<bufferization::BufferizationDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<memref::AllocOp, Operation *>> frees;
    bool simple = true;
    module.walk([&](memref::AllocOp alloc) {
      FailureOr<Operation *> last = lastUseOf(alloc);
      if (failed(last)) {
        simple = false;
        return WalkResult::interrupt();
      }
      frees.emplace_back(alloc, *last);
      return WalkResult::advance();
    });
    // Functions still returning buffers hand ownership to their callers,
    // which this pass does not track.
    for (auto function : module.getOps<func::FuncOp>())
      simple &= llvm::none_of(function.getResultTypes(),
                              [](Type type) { return isa<BaseMemRefType>(type); });
    if (!simple) {
      module->setAttr("hetrt.deallocation", StringAttr::get(&getContext(), "ownership"));
      OpPassManager ownership(ModuleOp::getOperationName());
      bufferization::BufferDeallocationPipelineOptions options;
      bufferization::buildBufferDeallocationPipeline(ownership, options);
      if (failed(runPipeline(ownership, module)))
        signalPassFailure();
      return;
    }
    module->setAttr("hetrt.deallocation", StringAttr::get(&getContext(), "last-use"));
    OpBuilder builder(&getContext());
    for (auto [alloc, last] : frees) {
      if (last->hasTrait<OpTrait::IsTerminator>())
        builder.setInsertionPoint(last);
      else
        builder.setInsertionPointAfter(last);
      builder.create<memref::DeallocOp>(alloc.getLoc(), alloc.getResult());
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createFreeAtLastUsePass() {
  return std::make_unique<FreeAtLastUsePass>();
}

namespace mlir::het {
void registerFreeAtLastUsePass() { PassRegistration<FreeAtLastUsePass>(); }
} // namespace mlir::het
