//===- ConvertHetToLinalg.cpp - the convert-het-to-linalg pass -------------===//
//
// Walks every het op once, in order, and replaces it with its lowering:
// linalg code (HetToLinalg.cpp) or a libhetrt call (HetToRuntime.cpp). Ops
// that neither handles are reported, all of them, before anything changes.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

struct ConvertHetToLinalgPass
    : public PassWrapper<ConvertHetToLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertHetToLinalgPass)

  ConvertHetToLinalgPass() = default;
  ConvertHetToLinalgPass(const ConvertHetToLinalgPass &other) : PassWrapper(other) {}
  explicit ConvertHetToLinalgPass(KernelLibrary library) {
    this->library = library == KernelLibrary::Dnnl ? "dnnl" : "reference";
  }

  StringRef getArgument() const override { return "convert-het-to-linalg"; }
  StringRef getDescription() const override {
    return "Lower het compute ops to linalg/tensor/arith/math and libhetrt calls "
           "(oneDNN or reference kernels)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                    func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                    math::MathDialect, memref::MemRefDialect, tensor::TensorDialect>();
  }

  Option<std::string> library{
      *this, "library",
      llvm::cl::desc("kernels of matmul/linear/conv2d/batch_norm: dnnl (oneDNN "
                     "primitives) or reference (het's plain loops)"),
      llvm::cl::init("dnnl")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (library != "dnnl" && library != "reference") {
      module.emitError("convert-het-to-linalg: library must be 'dnnl' or 'reference', got '")
          << library << "'";
      return signalPassFailure();
    }
    KernelLibrary choice = library == "dnnl" ? KernelLibrary::Dnnl : KernelLibrary::Reference;

    SmallVector<Operation *> work;
    bool unsupported = false;
    // Only function bodies compute; module-level het ops (het.cluster and
    // its device groups) describe placement and are left alone.
    for (auto function : module.getOps<func::FuncOp>())
    function.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa<HetDialect>(op->getDialect()))
        return WalkResult::advance();
      if (isLoweredToLinalg(op) || isLoweredToRuntimeCall(op)) {
        work.push_back(op);
        return WalkResult::skip(); // het.elementwise bodies go with their op
      }
      op->emitOpError("is not supported by the CPU code generator");
      unsupported = true;
      return WalkResult::skip();
    });
    if (unsupported)
      return signalPassFailure();

    OpBuilder builder(&getContext());
    for (Operation *op : work) {
      builder.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> replacement =
          isLoweredToLinalg(op) ? lowerToLinalg(builder, op)
                                : lowerToRuntimeCall(builder, module, op, choice);
      if (failed(replacement))
        return signalPassFailure();
      op->replaceAllUsesWith(*replacement);
      op->erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createConvertHetToLinalgPass(KernelLibrary library) {
  return std::make_unique<ConvertHetToLinalgPass>(library);
}

namespace mlir::het {
void registerConvertHetToLinalgPass() {
  PassRegistration<ConvertHetToLinalgPass>();
}
} // namespace mlir::het
