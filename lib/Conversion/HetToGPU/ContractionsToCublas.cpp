//===- ContractionsToCublas.cpp - matrix products as cuBLAS calls ----------===//
//
// On NVIDIA GPUs cuBLAS beats a thread-per-output product by a wide margin
// (it tiles through shared memory and registers), as oneDNN does on the
// CPU. Every contraction of the step that is one matrix product or a
// batch of them -- one each of m, n and k, batch dimensions leading in
// every operand, every operand a whole contiguous buffer, each input in
// either order of its two matrix dimensions -- becomes
//
//   hetrt_cublas_<kind>(batch, transpose_a, transpose_b, m, n, k, a, b, c)
//
// which computes, row-major, c[batch][m][n] += op(a)[batch][m][k] *
// op(b)[batch][k][n] (the op accumulates into its output as the linalg op
// did). The kind is the operands' format, the accumulator being f32:
//
//   sgemm       f32 operands, FP32 arithmetic (or TF32 tensor cores when the
//               build asked for --precision tf32: hetrt_cublas_gemm_tf32)
//   gemm_bf16   bf16 operands (mixed precision), tensor cores, f32 sums
//   gemm_f16    f16 operands, likewise
//
// (lib/Runtime/Gpu/CublasGemm.cpp: cublasGemmEx with CUBLAS_COMPUTE_32F or
// CUBLAS_COMPUTE_32F_FAST_TF32). The call is host code between kernels, on the process's one stream
// (lib/Runtime/Gpu/CublasGemm.cpp); the choice is visible in the IR as the
// callee, like hetrt_dnnl_* on CPUs. AMD targets keep generated products:
// Debian packages no rocBLAS.
//
//===----------------------------------------------------------------------===//

#include "../HetToLinalg/Lowering.h"
#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// The callee for a product of `operands`-typed inputs into f32.
StringRef calleeFor(Type operands, bool tf32) {
  if (operands.isBF16())
    return "hetrt_cublas_gemm_bf16";
  if (operands.isF16())
    return "hetrt_cublas_gemm_f16";
  return tf32 ? "hetrt_cublas_gemm_tf32" : "hetrt_cublas_sgemm";
}

/// One operand's layout: which of its dimensions are which loop.
struct MatrixLayout {
  bool batched = false;
  bool transposed = false; // the contracted (or n) dimension comes first
};

/// The layout of an operand whose map is (batch..., first, second) over the
/// loops, `rows` and `columns` being the loops of its natural order.
std::optional<MatrixLayout> layoutOf(AffineMap map, ArrayRef<unsigned> batch, unsigned rows,
                                     unsigned columns) {
  SmallVector<unsigned> dims;
  for (AffineExpr result : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(result);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  MatrixLayout layout;
  ArrayRef<unsigned> matrix = dims;
  // Batch dimensions lead, in the loops' order, in every operand: the
  // batch is then one dimension of their product (the buffers are whole).
  if (dims.size() != batch.size() + 2 || !llvm::equal(matrix.take_front(batch.size()), batch))
    return std::nullopt;
  layout.batched = !batch.empty();
  matrix = matrix.drop_front(batch.size());
  if (matrix[0] == rows && matrix[1] == columns)
    return layout;
  if (matrix[0] == columns && matrix[1] == rows) {
    layout.transposed = true;
    return layout;
  }
  return std::nullopt;
}

/// The element type of a whole contiguous buffer, or null.
Type wholeContiguousElement(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity() ? type.getElementType()
                                                                        : Type();
}

struct ContractionsToCublasPass
    : public PassWrapper<ContractionsToCublasPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ContractionsToCublasPass)
  explicit ContractionsToCublasPass(bool unmarkedNvidia = true, bool tf32 = false)
      : unmarkedNvidia(unmarkedNvidia), tf32(tf32) {}
  StringRef getArgument() const override { return "het-gpu-contractions-to-cublas"; }
  StringRef getDescription() const override {
    return "Replace the matrix products of functions compiled for NVIDIA GPUs by cuBLAS calls";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry
        .insert<LLVM::LLVMDialect, arith::ArithDialect, memref::MemRefDialect, func::FuncDialect>();
  }

  /// Whether `function`'s kernels are NVIDIA's: its hetrt.gpu_target, or
  /// for a single step (no function marked) the build's target.
  bool forNvidia(func::FuncOp function) const {
    auto label = function->getAttrOfType<StringAttr>(kGpuTargetAttr);
    return label ? label.getValue().starts_with("cuda ") : unmarkedNvidia;
  }

  /// The call's arguments, or failure when `op` is no single product of
  /// whole buffers, f32 into f32 or two bf16 (f16) inputs into f32.
  FailureOr<SmallVector<int64_t>> shape(linalg::LinalgOp op) const {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
        !linalg::isaContractionOpInterface(op))
      return failure();
    Type aType = wholeContiguousElement(op.getDpsInputOperand(0)->get());
    Type bType = wholeContiguousElement(op.getDpsInputOperand(1)->get());
    Type cType = wholeContiguousElement(op.getDpsInitOperand(0)->get());
    if (!aType || aType != bType || !cType || !cType.isF32() ||
        !(aType.isF32() || aType.isBF16() || aType.isF16()))
      return failure();
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.size() != 1 || dims->n.size() != 1 || dims->k.size() != 1)
      return failure();
    SmallVector<unsigned> batch(dims->batch.begin(), dims->batch.end());
    llvm::sort(batch);
    unsigned m = dims->m.front(), n = dims->n.front(), k = dims->k.front();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // inferContractionDims takes m from the first input and n from the
    // second, so a holds (m, k) and b (k, n), each in either order; an
    // output stored (n, m) stays a generated kernel.
    std::optional<MatrixLayout> a = layoutOf(maps[0], batch, m, k);
    std::optional<MatrixLayout> b = layoutOf(maps[1], batch, k, n);
    std::optional<MatrixLayout> c = layoutOf(maps[2], batch, m, n);
    if (!a || !b || !c || c->transposed)
      return failure();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t batches = 1;
    for (unsigned d : batch)
      batches *= ranges[d];
    return SmallVector<int64_t>{batches,   a->transposed, b->transposed,
                                ranges[m], ranges[n],     ranges[k]};
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SmallVector<std::pair<linalg::LinalgOp, SmallVector<int64_t>>> products;
    for (func::FuncOp function : gpuFunctions(module)) {
      if (!forNvidia(function))
        continue;
      function.walk([&](linalg::LinalgOp op) {
        if (FailureOr<SmallVector<int64_t>> s = shape(op); succeeded(s))
          products.emplace_back(op, *s);
      });
    }
    if (products.empty())
      return;
    Type i64 = IntegerType::get(context, 64);
    Type pointer = LLVM::LLVMPointerType::get(context);
    for (auto &[op, s] : products) {
      StringRef callee =
          calleeFor(getElementTypeOrSelf(op.getDpsInputOperand(0)->get().getType()), tf32);
      if (!module.lookupSymbol(callee)) {
        OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
        auto declaration = b.create<func::FuncOp>(
            module.getLoc(), callee,
            b.getFunctionType({i64, i64, i64, i64, i64, i64, pointer, pointer, pointer}, {}));
        declaration.setPrivate();
      }
      OpBuilder b(op);
      Location loc = op.getLoc();
      SmallVector<Value> arguments;
      for (int64_t word : ArrayRef<int64_t>(s).take_front(6))
        arguments.push_back(b.create<arith::ConstantIntOp>(loc, word, 64));
      Value a = op.getDpsInputOperand(0)->get();
      Value bOperand = op.getDpsInputOperand(1)->get();
      arguments.push_back(bufferAddress(b, loc, a));
      arguments.push_back(bufferAddress(b, loc, bOperand));
      arguments.push_back(bufferAddress(b, loc, op.getDpsInitOperand(0)->get()));
      b.create<func::CallOp>(loc, callee, TypeRange{}, arguments);
      op->erase();
    }
  }

  bool unmarkedNvidia;
  bool tf32;
};

} // namespace

std::unique_ptr<Pass> mlir::het::createContractionsToCublasPass(bool unmarkedNvidia, bool tf32) {
  return std::make_unique<ContractionsToCublasPass>(unmarkedNvidia, tf32);
}
