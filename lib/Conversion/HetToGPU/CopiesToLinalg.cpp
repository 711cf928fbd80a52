//===- CopiesToLinalg.cpp - buffer copies become parallel loops -----------===//
//
// Bufferization leaves memref.copy where a result must land in a caller's
// buffer (the step's updated parameters into its out-parameters). On the
// host a copy is a memcpy; for the GPU it would stay a host op that
// het-gpu-wrap-host-loops runs as one thread: 107 ms for the MLP's
// 1024x784 weights on an H200 (2026-12-04). As linalg.copy it becomes a
// parallel loop nest, one thread per element, like any element-wise op.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

struct CopiesToLinalgPass : public PassWrapper<CopiesToLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CopiesToLinalgPass)
  StringRef getArgument() const override { return "het-gpu-copies-to-linalg"; }
  StringRef getDescription() const override {
    return "Rewrite memref.copy of ranked buffers as linalg.copy (parallel loops on the GPU)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    for (func::FuncOp function : gpuFunctions(getOperation()))
      function.walk([&](memref::CopyOp copy) {
        auto source = dyn_cast<MemRefType>(copy.getSource().getType());
        auto target = dyn_cast<MemRefType>(copy.getTarget().getType());
        if (source && target && source.getRank() > 0)
          copies.push_back(copy);
      });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createCopiesToLinalgPass() {
  return std::make_unique<CopiesToLinalgPass>();
}
