//===- HetToRuntime.cpp - het library ops to calls into libhetrt -----------===//
//
// Matmul, linear layers, convolution, batch normalization, pooling,
// embeddings, dropout (its Philox draws, which the evaluator's code
// defines bit for bit) and the mixture-of-experts ops become one call each:
//
//   void hetrt_<library>_<op>(const int64_t *meta, void *const *buffers);
//
// `buffers` holds the operands then the results (contiguous, row-major);
// `meta` is a constant: operand count, result count, each buffer's rank
// (its high half the layout: row-major, or channel-blocked where
// het-channel-blocked-activations marked it) and sizes, then the op's
// attributes (integers, and doubles as their bits).
// Results are fresh buffers the call fills; to the tensor world they are
// `bufferization.to_tensor ... restrict`, so one-shot bufferization keeps
// value semantics around the call. The library (oneDNN or het's reference
// loops) is the callee's name, so the choice is visible in the IR.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"
#include "het/Tune/GemmProducts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>

using namespace mlir;
using namespace mlir::het;

namespace {

int64_t bitsOf(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The op's attributes in the order the runtime reads them.
SmallVector<int64_t> attributeWords(Operation *op) {
  SmallVector<int64_t> words;
  auto append = [&](ArrayRef<int64_t> values) { words.append(values.begin(), values.end()); };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](MatmulOp o) {
        words.push_back(o.getTransposeLhs());
        words.push_back(o.getTransposeRhs());
      })
      // Then the engine of each matrix product: a bit per product set where
      // a tuning database chose OpenBLAS (het/Tune/GemmProducts.h), 0 else.
      .Case([&](LinearOp o) {
        words.push_back(static_cast<int64_t>(o.getActivation()));
        words.push_back(::het::tune::gemmEngineBits(o));
      })
      // The input gradient of a first layer (its input is data) is unused:
      // the kernel skips that matmul.
      .Case([&](LinearGradOp o) {
        words.push_back(o->getResult(0).use_empty());
        words.push_back(::het::tune::gemmEngineBits(o));
      })
      .Case<Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp>([&](auto o) {
        append(o.getStrides());
        append(o.getPadding());
        append(o.getDilation());
        words.push_back(o.getGroups());
      })
      .Case<MaxPool2dOp, AvgPool2dOp, MaxPool2dGradOp, AvgPool2dGradOp>([&](auto o) {
        append(o.getKernel());
        append(o.getStrides());
        append(o.getPadding());
      })
      .Case<BatchNormOp, BatchNormReluOp, BatchNormInferenceOp>(
          [&](auto o) { words.push_back(bitsOf(o.getEpsilon().convertToDouble())); })
      .Case<EmbeddingOp, EmbeddingGradOp>([&](auto o) {
        // The members a vocabulary-sharded table is split over (1: whole).
        int64_t members = 1;
        if (auto shard = o.getVocabShardAttr())
          if (auto group = SymbolTable::lookupNearestSymbolFrom<TensorParallelGroupOp>(o, shard))
            members = group.getSize();
        words.push_back(members);
        words.push_back(o.getPaddingIdx().value_or(-1)); // rows without gradient (-1: none)
      })
      .Case<AttentionOp, AttentionGradOp>([&](auto o) {
        words.push_back(bitsOf(o.getScale().convertToDouble()));
        words.push_back(o.getCausal());
      })
      .Case([&](MoERouterOp o) {
        words.push_back(o.getTopK());
        words.push_back(o.getNormalize());
      })
      .Case([&](MoERouterGradOp o) { words.push_back(o.getNormalize()); })
      // A forward dispatch counts the choices it drops (1); a gradient's
      // and het-recompute's clone of a forward one do not.
      .Case([&](MoEDispatchOp o) {
        words.push_back(!o.getGradient() && !o->hasAttr(HetDialect::getRecomputedAttrName()));
      })
      .Case([&](MoEExpertMatmulOp o) { words.push_back(o.getTransposeRhs()); })
      .Case([&](MoEExpertWeightGradOp o) { words.push_back(o.getTransposeResult()); })
      .Case([&](DropoutOp o) {
        words.push_back(bitsOf(o.getP().convertToDouble()));
        words.push_back(o.getSeed());
        words.push_back(o.getStream());
      })
      .Default([](Operation *) {});
  return words;
}

/// Ops that oneDNN primitives implement (the rest always use het's loops).
bool hasDnnlKernel(Operation *op) {
  return isa<MatmulOp, LinearOp, LinearGradOp, Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp,
             BatchNormOp, BatchNormReluOp, BatchNormGradOp, BatchNormReluGradOp, AttentionOp,
             AttentionGradOp, MoEExpertMatmulOp, MoEExpertWeightGradOp>(op);
}

MemRefType contiguous(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// The buffer of `tensor`, which the runtime only reads. Marked read_only,
/// bufferization need not copy it first: a function argument passed on to
/// a kernel is otherwise copied on every call, in case the kernel wrote it.
Value readOnlyBuffer(OpBuilder &b, Location loc, Value tensor) {
  return b.create<bufferization::ToMemrefOp>(loc, contiguous(tensor.getType()), tensor,
                                             /*read_only=*/true);
}

} // namespace

Value mlir::het::bufferAddress(OpBuilder &b, Location loc, Value memref) {
  Value index = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memref);
  Value word = b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
  return b.create<LLVM::IntToPtrOp>(loc, LLVM::LLVMPointerType::get(b.getContext()), word);
}

Value mlir::het::tensorAddress(OpBuilder &b, Location loc, Value tensor) {
  return bufferAddress(b, loc, readOnlyBuffer(b, loc, tensor));
}

void mlir::het::declareRuntimeFunction(ModuleOp module, StringRef name, FunctionType type) {
  if (module.lookupSymbol(name))
    return;
  // Declarations and globals go after the code: MLIR 19 finds a symbol by
  // walking the module from its start, and One-Shot Bufferize looks up a
  // call's callee many times per call, so the functions the step calls (the
  // outlined layers) are best found first.
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto function = b.create<func::FuncOp>(module.getLoc(), name, type);
  function.setPrivate();
}

bool mlir::het::hasCudnnKernel(Operation *op) {
  return isa<Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp>(op);
}

bool mlir::het::hasLowPrecisionKernel(Operation *op, KernelLibrary library) {
  auto formatOf = [](Type type) -> Type {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor ? tensor.getElementType() : Type();
  };
  if (library == KernelLibrary::Cudnn) {
    // cuDNN's convolutions in bf16 or f16 with f32 arithmetic (tensor
    // cores), as PyTorch's CUDA autocast runs them: x, w and y in one
    // 16-bit format. A biased forward convolution widens instead: cuDNN
    // would add the bias into the rounded output (a second rounding the
    // CPU build does not make), so it computes in f32 between casts.
    if (!hasCudnnKernel(op) || (isa<Conv2dOp>(op) && op->getNumOperands() > 2))
      return false;
    Type format;
    SmallVector<Type> types(op->getOperandTypes());
    llvm::append_range(types, op->getResultTypes());
    for (Type type : types) {
      Type element = formatOf(type);
      if (!element || !(element.isBF16() || element.isF16()) || (format && element != format))
        return false;
      format = element;
    }
    return true;
  }
  // Debian 12's oneDNN (2.6) has bf16 matmuls and convolutions on AVX-512
  // CPUs but no f16 ones ("could not create a primitive descriptor"): f16
  // ops compute in f32 between casts (f16 storage) like the rest.
  auto isF16 = [&](Type type) {
    Type element = formatOf(type);
    return element && element.isF16();
  };
  if (llvm::any_of(op->getOperandTypes(), isF16) || llvm::any_of(op->getResultTypes(), isF16))
    return false;
  return library == KernelLibrary::Dnnl && hasDnnlKernel(op) &&
         isa<MatmulOp, LinearOp, LinearGradOp, Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp>(op);
}

bool mlir::het::isLoweredToRuntimeCall(Operation *op) {
  return isa<MatmulOp, LinearOp, LinearGradOp, Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp,
             MaxPool2dOp, AvgPool2dOp, MaxPool2dGradOp, AvgPool2dGradOp, BatchNormOp,
             BatchNormReluOp, BatchNormInferenceOp, BatchNormGradOp, BatchNormReluGradOp,
             EmbeddingOp, EmbeddingGradOp, DropoutOp, AttentionOp, AttentionGradOp, MoERouterOp,
             MoERouterGradOp, MoEDispatchOp, MoECombineOp, MoESlotGradOp, MoEExpertFractionOp,
             MoEExpertMatmulOp, MoEExpertWeightGradOp>(op);
}

FailureOr<SmallVector<Value>> mlir::het::lowerToRuntimeCall(OpBuilder &b, ModuleOp module,
                                                            Operation *op,
                                                            KernelLibrary library) {
  Location loc = op->getLoc();
  SmallVector<Type> bufferTypes(op->getOperandTypes());
  bufferTypes.append(op->getResultTypes().begin(), op->getResultTypes().end());
  StringRef opName = op->getName().stripDialect();
  bool dnnl = library == KernelLibrary::Dnnl && hasDnnlKernel(op);
  bool cudnn = library == KernelLibrary::Cudnn && hasCudnnKernel(op);
  // The runtime kernels are written for f32 (and i64 indices); oneDNN's
  // matrix products and convolutions also take bf16 and f16
  // (hasLowPrecisionKernel; het-widen-low-precision gives every other op
  // f32 buffers first).
  bool lowPrecision = hasLowPrecisionKernel(op, library);
  for (Type type : bufferTypes) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return op->emitOpError("needs static tensor shapes for CPU code generation, got ")
             << type;
    Type element = tensor.getElementType();
    bool low = element.isBF16() || element.isF16();
    if (!element.isF32() && !element.isInteger(64) && !(low && lowPrecision))
      return op->emitOpError(lowPrecision || !low
                                 ? "CPU code generation supports f32, bf16 and f16 data (and "
                                   "i64 indices), got "
                                 : "has no bf16/f16 kernel here (het-widen-low-precision "
                                   "computes such ops in f32), got ")
             << type;
  }
  std::string callee = llvm::formatv("hetrt_{0}_{1}",
                                     dnnl    ? "dnnl"
                                     : cudnn ? "cudnn"
                                             : "ref",
                                     opName)
                           .str();
  ArrayRef<bool> channelBlocked;
  if (auto flags = op->getAttrOfType<DenseBoolArrayAttr>(kChannelBlockedAttr)) {
    // Only oneDNN's kernels and het's pooling read and write blocked buffers.
    if (!dnnl && !isa<MaxPool2dOp, AvgPool2dOp, MaxPool2dGradOp, AvgPool2dGradOp>(op))
      return op->emitOpError("has channel-blocked buffers (")
             << kChannelBlockedAttr << ") but its kernel " << callee << " reads row-major ones";
    if (flags.size() != static_cast<int64_t>(bufferTypes.size()))
      return op->emitOpError() << kChannelBlockedAttr << " needs one flag per operand and result ("
                               << bufferTypes.size() << "), got " << flags.size();
    channelBlocked = flags.asArrayRef();
  }
  return emitRuntimeCall(b, module, loc, callee, op->getOperands(), op->getResultTypes(),
                         attributeWords(op), /*retainsBuffers=*/false, channelBlocked);
}

SmallVector<Value> mlir::het::emitRuntimeCall(OpBuilder &b, ModuleOp module, Location loc,
                                              StringRef callee, ValueRange operands,
                                              TypeRange resultTypes, ArrayRef<int64_t> words,
                                              bool retainsBuffers,
                                              ArrayRef<bool> channelBlocked) {
  SmallVector<Type> bufferTypes(operands.getTypes());
  bufferTypes.append(resultTypes.begin(), resultTypes.end());
  // Constant meta data: counts, shapes, attributes.
  SmallVector<int64_t> meta{static_cast<int64_t>(operands.size()),
                            static_cast<int64_t>(resultTypes.size())};
  // The layout in a rank word's high half: KernelCall.h's BufferLayout.
  constexpr int64_t kChannelBlockedWord = int64_t{1} << 32;
  for (auto [index, type] : llvm::enumerate(bufferTypes)) {
    auto tensor = cast<RankedTensorType>(type);
    bool blocked = index < channelBlocked.size() && channelBlocked[index];
    // The element format in bits 40-47: KernelCall.h's ElementFormat.
    Type element = tensor.getElementType();
    int64_t format = element.isBF16() ? 1 : element.isF16() ? 2 : 0;
    meta.push_back(tensor.getRank() | (blocked ? kChannelBlockedWord : 0) | (format << 40));
    meta.append(tensor.getShape().begin(), tensor.getShape().end());
  }
  meta.append(words.begin(), words.end());
  static unsigned counter = 0; // names only; uniqueness is checked below
  std::string globalName;
  do {
    globalName = llvm::formatv("__hetrt_meta_{0}", counter++).str();
  } while (module.lookupSymbol(globalName));
  auto metaType = MemRefType::get({static_cast<int64_t>(meta.size())}, b.getI64Type());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody()); // see declareRuntimeFunction
    auto initial = DenseElementsAttr::get(
        RankedTensorType::get(metaType.getShape(), b.getI64Type()), ArrayRef<int64_t>(meta));
    b.create<memref::GlobalOp>(loc, globalName, b.getStringAttr("private"), metaType, initial,
                               /*constant=*/true, /*alignment=*/nullptr);
  }
  Value metaRef = b.create<memref::GetGlobalOp>(loc, metaType, globalName);

  // The buffer table: operands, then freshly allocated results.
  unsigned count = operands.size() + resultTypes.size();
  auto tableType = MemRefType::get({static_cast<int64_t>(count)}, b.getI64Type());
  Value table = b.create<memref::AllocaOp>(loc, tableType);
  SmallVector<Value> results;
  unsigned slot = 0;
  auto store = [&](Value memref) {
    Value index = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memref);
    Value word = b.create<arith::IndexCastOp>(loc, b.getI64Type(), index);
    Value position = b.create<arith::ConstantIndexOp>(loc, slot++);
    b.create<memref::StoreOp>(loc, word, table, ValueRange{position});
  };
  for (Value operand : operands)
    store(readOnlyBuffer(b, loc, operand));
  SmallVector<Value> buffers;
  for (Type result : resultTypes) {
    Value buffer = b.create<memref::AllocOp>(loc, contiguous(result),
                                             b.getI64IntegerAttr(64));
    store(buffer);
    buffers.push_back(buffer);
  }

  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  declareRuntimeFunction(module, callee, b.getFunctionType({ptr, ptr}, {}));
  auto call = b.create<func::CallOp>(
      loc, callee, TypeRange{}, ValueRange{bufferAddress(b, loc, metaRef), bufferAddress(b, loc, table)});
  if (retainsBuffers)
    call->setAttr(kRetainsBuffersAttr, b.getUnitAttr());

  for (auto [buffer, result] : llvm::zip(buffers, resultTypes))
    results.push_back(b.create<bufferization::ToTensorOp>(loc, result, buffer,
                                                          /*restrict=*/true, /*writable=*/true));
  return results;
}
