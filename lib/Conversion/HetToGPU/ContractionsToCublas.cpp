//===- ContractionsToCublas.cpp - matrix products as cuBLAS calls ----------===//
//
// On NVIDIA GPUs cuBLAS beats a thread-per-output product by a wide margin
// (it tiles through shared memory and registers), as oneDNN does on the
// CPU. Every f32 contraction of the step that is one matrix product or a
// batch of them -- one each of m, n and k, batch dimensions leading in
// every operand, every operand a whole contiguous buffer, each input in
// either order of its two matrix dimensions -- becomes
//
//   hetrt_cublas_sgemm(batch, transpose_a, transpose_b, m, n, k, a, b, c)
//
// which computes, row-major, c[batch][m][n] += op(a)[batch][m][k] *
// op(b)[batch][k][n] (the op accumulates into its output as the linalg op
// did). The call is host code between kernels, on the process's one stream
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

constexpr llvm::StringLiteral kCallee = "hetrt_cublas_sgemm";

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

bool wholeContiguousF32(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity() &&
         type.getElementType().isF32();
}

struct ContractionsToCublasPass
    : public PassWrapper<ContractionsToCublasPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ContractionsToCublasPass)
  explicit ContractionsToCublasPass(bool unmarkedNvidia = true) : unmarkedNvidia(unmarkedNvidia) {}
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
  /// whole f32 buffers.
  FailureOr<SmallVector<int64_t>> shape(linalg::LinalgOp op) const {
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
        !linalg::isaContractionOpInterface(op))
      return failure();
    for (OpOperand &operand : op->getOpOperands())
      if (!wholeContiguousF32(operand.get()))
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
    if (!module.lookupSymbol(kCallee)) {
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      auto declaration = b.create<func::FuncOp>(
          module.getLoc(), kCallee,
          b.getFunctionType({i64, i64, i64, i64, i64, i64, pointer, pointer, pointer}, {}));
      declaration.setPrivate();
    }
    for (auto &[op, s] : products) {
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
      b.create<func::CallOp>(loc, kCallee, TypeRange{}, arguments);
      op->erase();
    }
  }

  bool unmarkedNvidia;
};

} // namespace

std::unique_ptr<Pass> mlir::het::createContractionsToCublasPass(bool unmarkedNvidia) {
  return std::make_unique<ContractionsToCublasPass>(unmarkedNvidia);
}
