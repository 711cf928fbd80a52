//===- ConvertHetToLinalg.cpp - the convert-het-to-linalg pass -------------===//
//
// Walks every het op once, in order, and replaces it with its lowering:
// linalg code (HetToLinalg.cpp) or a libhetrt call (HetToRuntime.cpp). Ops
// that neither handles are reported, all of them, before anything changes.
// The kernel library is the pass option unless the enclosing function's
// `het.kernel_library` attribute says otherwise: a pipeline stage placed on
// `cpu.mlir` and one on `cpu.onednn` can then live in one module.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Dialect/Het/Transforms/AttentionDecomposition.h"
#include "het/Dialect/Het/Transforms/BatchNormDecomposition.h"

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

/// The per-function override of the pass's `library` option.

struct ConvertHetToLinalgPass
    : public PassWrapper<ConvertHetToLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ConvertHetToLinalgPass)

  ConvertHetToLinalgPass() = default;
  ConvertHetToLinalgPass(const ConvertHetToLinalgPass &other) : PassWrapper(other) {}
  ConvertHetToLinalgPass(KernelLibrary library, bool nativeBf16Products,
                         bool generatedBf16Products) {
    this->library = kernelLibraryName(library).str();
    this->bf16Products = nativeBf16Products ? "native" : "f32";
    this->generatedBf16Products = generatedBf16Products ? "native" : "f32";
  }

  StringRef getArgument() const override { return "convert-het-to-linalg"; }
  StringRef getDescription() const override {
    return "Lower het compute ops to linalg/tensor/arith/math and libhetrt calls "
           "(oneDNN or reference kernels) or generated linalg contractions (library=mlir)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                    func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                    math::MathDialect, memref::MemRefDialect, tensor::TensorDialect>();
  }

  Option<std::string> library{
      *this, "library",
      llvm::cl::desc("kernels of matmul/linear/conv2d/batch_norm: dnnl (oneDNN "
                     "primitives), reference (het's plain loops) or mlir (matmul, "
                     "linear, conv2d and embeddings generated as linalg, the rest "
                     "reference); "
                     "a function's het.kernel_library attribute overrides it"),
      llvm::cl::init("dnnl")};
  Option<std::string> bf16Products{
      *this, "bf16-products",
      llvm::cl::desc("native (oneDNN's bf16 kernels) or f32 (bf16 products computed in f32 on "
                     "their bf16-rounded operands, where the CPU's bf16 dot product is slower)"),
      llvm::cl::init("native")};
  Option<std::string> generatedBf16Products{
      *this, "generated-bf16-products",
      llvm::cl::desc("the same for generated contractions (library=mlir): native (bf16 operands "
                     "read by the contraction, for the AVX512-BF16 dot product) or f32 "
                     "(default: as bf16-products)"),
      llvm::cl::init("")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<KernelLibrary> choice = parseKernelLibrary(library);
    if (!choice) {
      module.emitError("convert-het-to-linalg: library must be 'dnnl', 'reference', 'mlir' or "
                       "'cudnn', got '")
          << library << "'";
      return signalPassFailure();
    }

    if (bf16Products != "native" && bf16Products != "f32") {
      module.emitError("convert-het-to-linalg: bf16-products must be 'native' or 'f32', got '")
          << bf16Products << "'";
      return signalPassFailure();
    }
    if (!generatedBf16Products.empty() && generatedBf16Products != "native" &&
        generatedBf16Products != "f32") {
      module.emitError(
          "convert-het-to-linalg: generated-bf16-products must be 'native' or 'f32', got '")
          << generatedBf16Products << "'";
      return signalPassFailure();
    }
    bool nativeBf16 = bf16Products == "native";
    bool generatedBf16 =
        generatedBf16Products.empty() ? nativeBf16 : generatedBf16Products == "native";
    SmallVector<std::pair<Operation *, KernelLibrary>> work;
    bool failedAny = false;
    // Only function bodies compute; module-level het ops (het.cluster and
    // its device groups) describe placement and are left alone.
    for (auto function : module.getOps<func::FuncOp>()) {
      KernelLibrary functionLibrary = *choice;
      if (Attribute attribute = function->getAttr(kKernelLibraryAttr)) {
        auto name = dyn_cast<StringAttr>(attribute);
        std::optional<KernelLibrary> parsed =
            name ? parseKernelLibrary(name.getValue()) : std::nullopt;
        if (!parsed) {
          function.emitError("function @")
              << function.getSymName() << ": " << kKernelLibraryAttr
              << " must be \"dnnl\", \"reference\", \"mlir\" or \"cudnn\", got " << attribute;
          failedAny = true;
          continue;
        }
        functionLibrary = *parsed;
      }
      // oneDNN's bf16 kernels and the generated bf16 contractions pay on
      // different units (AMX tiles, the AVX512-BF16 dot product): each is
      // chosen apart.
      widenLowPrecision(function, functionLibrary,
                        functionLibrary == KernelLibrary::Mlir ? generatedBf16 : nativeBf16);
      // Generated kernels have no batch-norm kernel: its statistics and
      // normalization become sums and element-wise ops, lowered below like
      // any others (BatchNormDecomposition.h).
      bool generated =
          functionLibrary == KernelLibrary::Mlir || functionLibrary == KernelLibrary::Cudnn;
      if (generated && failed(decomposeBatchNormOver(function))) {
        failedAny = true;
        continue;
      }
      // Only oneDNN builds have an attention kernel (hetrt_dnnl_attention,
      // blocked over queries); the others compute the three ops it fused.
      if (functionLibrary != KernelLibrary::Dnnl && failed(decomposeAttentionOver(function))) {
        failedAny = true;
        continue;
      }
      function.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (!isa<HetDialect>(op->getDialect()))
          return WalkResult::advance();
        if (isLoweredToLinalg(op) || isLoweredToRuntimeCall(op)) {
          work.emplace_back(op, functionLibrary);
          return WalkResult::skip(); // het.elementwise bodies go with their op
        }
        op->emitOpError("is not supported by the CPU code generator");
        failedAny = true;
        return WalkResult::skip();
      });
    }
    if (failedAny)
      return signalPassFailure();

    OpBuilder builder(&getContext());
    for (auto [op, opLibrary] : work) {
      builder.setInsertionPoint(op);
      // cuDNN takes a GPU's convolutions; the rest is generated.
      bool cudnnCall = opLibrary == KernelLibrary::Cudnn && hasCudnnKernel(op);
      bool generated =
          opLibrary == KernelLibrary::Mlir || (opLibrary == KernelLibrary::Cudnn && !cudnnCall);
      FailureOr<SmallVector<Value>> replacement =
          isLoweredToLinalg(op)                           ? lowerToLinalg(builder, op)
          : generated && isGeneratedAsLinalg(op)          ? lowerLibraryOpToLinalg(builder, op)
          : generated && isEmbeddingGeneratedAsLinalg(op) ? lowerEmbeddingToLinalg(builder, op)
          : generated && isPoolingGeneratedAsLinalg(op)
              ? lowerPoolingToLinalg(builder, op)
          : generated && isDropoutGeneratedAsLinalg(op)
              ? lowerDropoutToLinalg(builder, op)
              : lowerToRuntimeCall(builder, module, op,
                                   generated ? KernelLibrary::Mlir : opLibrary);
      if (failed(replacement))
        return signalPassFailure();
      op->replaceAllUsesWith(*replacement);
      op->erase();
    }
    // Tensor-parallel groups served the lowering of the ops over them (a
    // vocabulary shard's member count); nothing names them any more.
    for (auto group : llvm::make_early_inc_range(module.getOps<TensorParallelGroupOp>()))
      group.erase();
  }
};

} // namespace

std::optional<KernelLibrary> mlir::het::parseKernelLibrary(StringRef name) {
  if (name == "dnnl")
    return KernelLibrary::Dnnl;
  if (name == "reference")
    return KernelLibrary::Reference;
  if (name == "mlir")
    return KernelLibrary::Mlir;
  if (name == "cudnn")
    return KernelLibrary::Cudnn;
  return std::nullopt;
}

StringRef mlir::het::kernelLibraryName(KernelLibrary library) {
  switch (library) {
  case KernelLibrary::Dnnl: return "dnnl";
  case KernelLibrary::Reference: return "reference";
  case KernelLibrary::Mlir: return "mlir";
  case KernelLibrary::Cudnn:
    return "cudnn";
  }
  llvm_unreachable("unknown kernel library");
}

std::unique_ptr<Pass> mlir::het::createConvertHetToLinalgPass(KernelLibrary library,
                                                             bool nativeBf16Products,
                                                             bool generatedBf16Products) {
  return std::make_unique<ConvertHetToLinalgPass>(library, nativeBf16Products,
                                                  generatedBf16Products);
}

namespace mlir::het {
void registerConvertHetToLinalgPass() {
  PassRegistration<ConvertHetToLinalgPass>();
}
} // namespace mlir::het
