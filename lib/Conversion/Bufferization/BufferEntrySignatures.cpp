//===- BufferEntrySignatures.cpp - entry functions take buffers ----------===//
//
// An entry function (the training step, predict, a pipeline stage) is
// called only by the runtime, through the wrapper EmitEntryPoints builds
// over its bufferized signature: inputs as buffers, then one out-parameter
// per result. This pass gives it that signature before One-Shot
// Bufferize runs:
//
//   func @step(%w: tensor<..>) -> tensor<..>        becomes
//   func @step(%w: memref<..>, %out: memref<..>) {
//     %t = bufferization.to_tensor %w restrict writable
//     ...
//     bufferization.materialize_in_destination %r in restrict writable %out
//
// which is what buffer-results-to-out-params would make of it, in the
// same argument order. The reason is compile time: One-Shot's module
// analysis compares every tensor result of a function with every tensor
// argument (equivalence and aliasing, to tell its callers), quadratic in
// the arity. An entry function has no callers, so the answer is unused,
// and a deep model's step has thousands of both (parameters and optimizer
// state in and out: 2,300 x 2,300 at 48 GPT blocks, half of One-Shot's
// time). With memref arguments and no results there is nothing to pair.
//
// Out-parameters never alias inputs (libhetrt passes fresh output
// buffers), hence `restrict`; inputs stay writable as function arguments
// are under One-Shot. The copies into out-parameters are the ones
// buffer-results-to-out-params inserts, and het-elide-out-param-copies
// removes them the same way.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace {

/// A contiguous buffer for a tensor of static shape; null otherwise.
MemRefType bufferTypeOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return {};
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Whether every tensor in the signature has a static shape (a dynamic
/// one is left to One-Shot, which knows how to handle it).
bool hasStaticTensorSignature(func::FuncOp function) {
  auto staticOrNotTensor = [](Type type) {
    return !isa<TensorType>(type) || static_cast<bool>(bufferTypeOf(type));
  };
  return llvm::all_of(function.getArgumentTypes(), staticOrNotTensor) &&
         llvm::all_of(function.getResultTypes(), staticOrNotTensor);
}

void bufferSignature(func::FuncOp function) {
  Block &entry = function.getBody().front();
  OpBuilder b(function.getContext());
  Location loc = function.getLoc();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument argument : entry.getArguments()) {
    MemRefType bufferType = bufferTypeOf(argument.getType());
    if (!bufferType)
      continue;
    Type tensorType = argument.getType();
    argument.setType(bufferType);
    auto tensor = b.create<bufferization::ToTensorOp>(loc, tensorType, argument,
                                                      /*restrict=*/true, /*writable=*/true);
    argument.replaceAllUsesExcept(tensor, tensor);
  }

  // Tensor results become out-parameters after the inputs, in result
  // order, with the results' attributes; other results stay results.
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Value> keptResults;
  SmallVector<Type> keptTypes;
  SmallVector<DictionaryAttr> keptAttrs;
  SmallVector<std::pair<unsigned, DictionaryAttr>> outAttrs;
  b.setInsertionPoint(ret);
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    DictionaryAttr attrs = function.getResultAttrDict(index);
    MemRefType bufferType = bufferTypeOf(value.getType());
    if (!bufferType) {
      keptResults.push_back(value);
      keptTypes.push_back(value.getType());
      keptAttrs.push_back(attrs);
      continue;
    }
    BlockArgument out = entry.addArgument(bufferType, loc);
    auto materialize =
        b.create<bufferization::MaterializeInDestinationOp>(loc, value, out);
    materialize.setRestrict(true);
    materialize.setWritable(true);
    if (attrs)
      outAttrs.emplace_back(out.getArgNumber(), attrs);
  }
  ret->setOperands(keptResults);
  function.setType(b.getFunctionType(entry.getArgumentTypes(), keptTypes));
  function.setAllResultAttrs(keptAttrs);
  for (auto [index, attrs] : outAttrs)
    function.setArgAttrs(index, attrs);
}

struct BufferEntrySignaturesPass
    : public PassWrapper<BufferEntrySignaturesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BufferEntrySignaturesPass)

  StringRef getArgument() const override { return "het-buffer-entry-signatures"; }
  StringRef getDescription() const override {
    return "Give public functions nothing in the module calls (entry points) buffer "
           "arguments and out-parameters before One-Shot Bufferize";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<bufferization::BufferizationDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto function : module.getOps<func::FuncOp>()) {
      if (function.isExternal() || function.isPrivate() || !function.getBody().hasOneBlock() ||
          !hasStaticTensorSignature(function) ||
          !SymbolTable::symbolKnownUseEmpty(function, module))
        continue;
      bufferSignature(function);
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createBufferEntrySignaturesPass() {
  return std::make_unique<BufferEntrySignaturesPass>();
}

namespace mlir::het {
void registerBufferEntrySignaturesPass() { PassRegistration<BufferEntrySignaturesPass>(); }
} // namespace mlir::het
