//===- EmitEntryPoints.cpp - the C ABI between generated code and libhetrt --===//
//
// Once the module is in the LLVM dialect (memrefs passed as bare pointers,
// results as out-parameters) each entry function is wrapped as
// `void het_step(void **in, void **out)`: the wrapper loads each buffer's
// address from the runtime's tables and calls the step. `main` passes the
// wrappers and the `het_model_info` text to `hetrt_main`
// (include/het-c/hetrt.h).
//
// The wrappers are built this late, in the LLVM dialect, because a deep
// model's step takes thousands of buffers (4,600 at 48 GPT blocks): built
// earlier as memref descriptors they were tens of thousands of operations
// that every conversion pass after them walked and canonicalization then
// folded away again. Here they are two operations per buffer.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// `void <wrapperName>(void **in, void **out)` calling `target`, whose first
/// `numInputs` parameters are inputs and the rest out-parameters, each a
/// buffer's address.
LogicalResult buildWrapper(ModuleOp module, LLVM::LLVMFuncOp target, unsigned numInputs,
                           StringRef wrapperName) {
  MLIRContext *context = module.getContext();
  auto ptr = LLVM::LLVMPointerType::get(context);
  ArrayRef<Type> parameters = target.getFunctionType().getParams();
  if (numInputs > parameters.size())
    return target.emitError("entry point @")
           << target.getSymName() << " takes " << parameters.size()
           << " buffers, fewer than its " << numInputs << " inputs";
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = target.getLoc();
  auto wrapper = b.create<LLVM::LLVMFuncOp>(
      loc, wrapperName, LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(context), {ptr, ptr}));
  Block *entry = wrapper.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  SmallVector<Value> arguments;
  for (auto [i, type] : llvm::enumerate(parameters)) {
    if (type != ptr)
      return target.emitError("entry point argument ")
             << i << " must be a contiguous static buffer (a bare pointer once lowered), got "
             << type;
    bool isInput = i < numInputs;
    int32_t slot = static_cast<int32_t>(isInput ? i : i - numInputs);
    Value table = entry->getArgument(isInput ? 0 : 1);
    Value address = b.create<LLVM::GEPOp>(loc, ptr, ptr, table, ArrayRef<LLVM::GEPArg>{slot});
    arguments.push_back(b.create<LLVM::LoadOp>(loc, ptr, address));
  }
  b.create<LLVM::CallOp>(loc, target, arguments);
  b.create<LLVM::ReturnOp>(loc, ValueRange{});
  return success();
}

struct EmitEntryPointsPass : public PassWrapper<EmitEntryPointsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmitEntryPointsPass)

  StringRef getArgument() const override { return "het-emit-entry-points"; }
  StringRef getDescription() const override {
    return "Add het_step/het_predict C wrappers, het_model_info and main (in the LLVM "
           "dialect, after func-to-llvm with bare-pointer buffers)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect>();
  }

  /// A pipeline (convert-het-to-runtime): `het_entry_<function>` for every
  /// stage function, which the runtime finds by name (the executable exports
  /// its symbols), and `main` calling hetrt_pipeline_main.
  void emitPipeline(ModuleOp module, StringAttr info, ArrayAttr entries) {
    if (!info) {
      module.emitError("het-emit-entry-points: a pipeline module needs hetrt.model_info");
      return signalPassFailure();
    }
    for (Attribute entry : entries) {
      StringRef name = cast<StringAttr>(entry).getValue();
      int64_t inputs = -1;
      for (StringRef line : llvm::split(info.getValue(), '\n')) {
        SmallVector<StringRef> words;
        line.split(words, ' ');
        // function <stage> <variant> <phase> <symbol> <inputs> <outputs> <receives>
        if (words.size() == 8 && words[0] == "function" && words[4] == name)
          (void)words[5].getAsInteger(10, inputs);
      }
      auto function = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!function || inputs < 0) {
        module.emitError("het-emit-entry-points: no function or description for entry @") << name;
        return signalPassFailure();
      }
      if (failed(buildWrapper(module, function, inputs, ("het_entry_" + name).str())))
        return signalPassFailure();
    }
    // int main(int argc, char **argv) {
    //   return hetrt_pipeline_main(argc, argv, het_model_info); }
    emitMain(module, info, "hetrt_pipeline_main", {});
  }

  /// `het_model_info` (the info text as a NUL-terminated global) and
  /// `int main(int argc, char **argv)` returning
  /// `runtimeEntry(argc, argv, het_model_info, entries...)`, each of
  /// `entries` the address of a function or null.
  void emitMain(ModuleOp module, StringAttr info, StringRef runtimeEntry,
                ArrayRef<std::optional<StringRef>> entries) {
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    emitInfoGlobal(b, loc, info);
    MLIRContext *context = b.getContext();
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto i32 = b.getI32Type();
    SmallVector<Type> parameters{i32, ptr, ptr};
    parameters.append(entries.size(), ptr);
    auto callee =
        b.create<LLVM::LLVMFuncOp>(loc, runtimeEntry, LLVM::LLVMFunctionType::get(i32, parameters));
    auto main = b.create<LLVM::LLVMFuncOp>(loc, "main",
                                           LLVM::LLVMFunctionType::get(i32, {i32, ptr}));
    Block *entry = main.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    SmallVector<Value> arguments{entry->getArgument(0), entry->getArgument(1),
                                 b.create<LLVM::AddressOfOp>(loc, ptr, "het_model_info")};
    for (std::optional<StringRef> function : entries)
      arguments.push_back(function ? b.create<LLVM::AddressOfOp>(loc, ptr, *function).getResult()
                                   : b.create<LLVM::ZeroOp>(loc, ptr).getResult());
    Value status = b.create<LLVM::CallOp>(loc, callee, arguments).getResult();
    b.create<LLVM::ReturnOp>(loc, status);
  }

  /// The info text as a NUL-terminated global `het_model_info`.
  void emitInfoGlobal(OpBuilder &b, Location loc, StringAttr info) {
    std::string text = info.getValue().str();
    text.push_back('\0');
    auto arrayType = LLVM::LLVMArrayType::get(IntegerType::get(b.getContext(), 8), text.size());
    b.create<LLVM::GlobalOp>(loc, arrayType, /*isConstant=*/true, LLVM::Linkage::External,
                             "het_model_info", b.getStringAttr(text));
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto info = module->getAttrOfType<StringAttr>("hetrt.model_info");
    if (auto entries = module->getAttrOfType<ArrayAttr>("hetrt.entries"))
      return emitPipeline(module, info, entries);
    auto stepRef = module->getAttrOfType<FlatSymbolRefAttr>("hetrt.step");
    if (!info || !stepRef) {
      module.emitError("het-emit-entry-points needs het-build-entry-points to run first");
      return signalPassFailure();
    }
    // Input counts are in the info text ("step <name> <in> <out>",
    // "predict <name> <in> <out>").
    auto inputsOf = [&](StringRef keyword) -> int64_t {
      for (StringRef line : llvm::split(info.getValue(), '\n')) {
        SmallVector<StringRef> words;
        line.split(words, ' ');
        int64_t n = -1;
        if (words.size() == 4 && words[0] == keyword && !words[2].getAsInteger(10, n))
          return n;
      }
      return -1;
    };
    auto step = module.lookupSymbol<LLVM::LLVMFuncOp>(stepRef.getValue());
    if (!step) {
      module.emitError("het-emit-entry-points: no LLVM function @")
          << stepRef.getValue() << " (the pass runs after func-to-llvm)";
      return signalPassFailure();
    }
    if (failed(buildWrapper(module, step, inputsOf("step"), "het_step")))
      return signalPassFailure();
    std::optional<StringRef> predictWrapper;
    if (auto predictRef = module->getAttrOfType<FlatSymbolRefAttr>("hetrt.predict")) {
      auto predict = module.lookupSymbol<LLVM::LLVMFuncOp>(predictRef.getValue());
      if (!predict || failed(buildWrapper(module, predict, inputsOf("predict"), "het_predict")))
        return signalPassFailure();
      predictWrapper = "het_predict";
    }

    // int main(int argc, char **argv) {
    //   return hetrt_main(argc, argv, het_model_info, het_step, het_predict); }
    emitMain(module, info, "hetrt_main", {StringRef("het_step"), predictWrapper});
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createEmitEntryPointsPass() {
  return std::make_unique<EmitEntryPointsPass>();
}

namespace mlir::het {
void registerEmitEntryPointsPass() { PassRegistration<EmitEntryPointsPass>(); }
} // namespace mlir::het
