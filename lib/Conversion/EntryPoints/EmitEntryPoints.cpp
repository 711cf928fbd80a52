//===- EmitEntryPoints.cpp - the C ABI between generated code and libhetrt --===//
//
// After bufferization (results are out-parameters) each entry function is
// wrapped as `void het_step(void **in, void **out)`: the wrapper builds a
// memref descriptor around each contiguous buffer the runtime passes and
// calls the step. The descriptor is built in the LLVM dialect and handed
// over through an unrealized cast that reconcile-unrealized-casts removes
// once memrefs are LLVM structs themselves. `main` passes the wrappers and
// the `het_model_info` text to `hetrt_main` (include/het-c/hetrt.h).
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// A descriptor for a contiguous row-major buffer at `pointer` of `type`.
Value buildDescriptor(OpBuilder &b, Location loc, Value pointer, MemRefType type) {
  MLIRContext *context = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto i64 = b.getI64Type();
  int64_t rank = type.getRank();
  SmallVector<Type> fields{ptr, ptr, i64};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto structType = LLVM::LLVMStructType::getLiteral(context, fields);
  auto constant = [&](int64_t v) {
    return b.create<LLVM::ConstantOp>(loc, i64, b.getI64IntegerAttr(v));
  };
  Value descriptor = b.create<LLVM::UndefOp>(loc, structType);
  descriptor = b.create<LLVM::InsertValueOp>(loc, descriptor, pointer, ArrayRef<int64_t>{0});
  descriptor = b.create<LLVM::InsertValueOp>(loc, descriptor, pointer, ArrayRef<int64_t>{1});
  descriptor = b.create<LLVM::InsertValueOp>(loc, descriptor, constant(0), ArrayRef<int64_t>{2});
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    descriptor = b.create<LLVM::InsertValueOp>(loc, descriptor, constant(type.getDimSize(d)),
                                               ArrayRef<int64_t>{3, d});
    descriptor = b.create<LLVM::InsertValueOp>(loc, descriptor, constant(stride),
                                               ArrayRef<int64_t>{4, d});
    stride *= type.getDimSize(d);
  }
  return b.create<UnrealizedConversionCastOp>(loc, type, descriptor).getResult(0);
}

/// `void <wrapperName>(void **in, void **out)` calling `target`, whose first
/// `numInputs` arguments are inputs and the rest out-parameters.
LogicalResult buildWrapper(ModuleOp module, func::FuncOp target, unsigned numInputs,
                           StringRef wrapperName) {
  MLIRContext *context = module.getContext();
  auto ptr = LLVM::LLVMPointerType::get(context);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = target.getLoc();
  auto wrapper = b.create<func::FuncOp>(loc, wrapperName, b.getFunctionType({ptr, ptr}, {}));
  Block *entry = wrapper.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> arguments;
  for (auto [i, type] : llvm::enumerate(target.getArgumentTypes())) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || !memref.hasStaticShape() || !memref.getLayout().isIdentity())
      return target.emitError("entry point argument ")
             << i << " must be a contiguous static memref after bufferization, got " << type;
    bool isInput = i < numInputs;
    int32_t slot = static_cast<int32_t>(isInput ? i : i - numInputs);
    Value table = entry->getArgument(isInput ? 0 : 1);
    Value address = b.create<LLVM::GEPOp>(loc, ptr, ptr, table, ArrayRef<LLVM::GEPArg>{slot});
    Value pointer = b.create<LLVM::LoadOp>(loc, ptr, address);
    arguments.push_back(buildDescriptor(b, loc, pointer, memref));
  }
  b.create<func::CallOp>(loc, target, arguments);
  b.create<func::ReturnOp>(loc);
  return success();
}

struct EmitEntryPointsPass : public PassWrapper<EmitEntryPointsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmitEntryPointsPass)

  StringRef getArgument() const override { return "het-emit-entry-points"; }
  StringRef getDescription() const override {
    return "Add het_step/het_predict C wrappers, het_model_info and main (after "
           "bufferization with results as out-parameters)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LLVM::LLVMDialect, func::FuncDialect>();
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
      auto function = module.lookupSymbol<func::FuncOp>(name);
      if (!function || inputs < 0) {
        module.emitError("het-emit-entry-points: no function or description for entry @") << name;
        return signalPassFailure();
      }
      if (failed(buildWrapper(module, function, inputs, ("het_entry_" + name).str())))
        return signalPassFailure();
    }
    // int main(int argc, char **argv) {
    //   return hetrt_pipeline_main(argc, argv, het_model_info); }
    emitMain(module, info, "hetrt_pipeline_main", {}, nullptr);
  }

  /// `het_model_info` (the info text as a NUL-terminated global) and
  /// `int main(int argc, char **argv)` returning
  /// `runtimeEntry(argc, argv, het_model_info, extra...)`; `extra` builds
  /// the further arguments inside main.
  void emitMain(ModuleOp module, StringAttr info, StringRef runtimeEntry, TypeRange extraTypes,
                function_ref<SmallVector<Value>(OpBuilder &, Location)> extra) {
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Location loc = module.getLoc();
    emitInfoGlobal(b, loc, info);
    auto ptr = LLVM::LLVMPointerType::get(b.getContext());
    auto i32 = b.getI32Type();
    SmallVector<Type> parameters{i32, ptr, ptr};
    parameters.append(extraTypes.begin(), extraTypes.end());
    auto callee = b.create<func::FuncOp>(loc, runtimeEntry, b.getFunctionType(parameters, {i32}));
    callee.setPrivate();
    auto main = b.create<func::FuncOp>(loc, "main", b.getFunctionType({i32, ptr}, {i32}));
    Block *entry = main.addEntryBlock();
    b.setInsertionPointToStart(entry);
    SmallVector<Value> arguments{entry->getArgument(0), entry->getArgument(1),
                                 b.create<LLVM::AddressOfOp>(loc, ptr, "het_model_info")};
    if (extra)
      arguments.append(extra(b, loc));
    Value status = b.create<func::CallOp>(loc, callee, arguments).getResult(0);
    b.create<func::ReturnOp>(loc, status);
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
    MLIRContext *context = &getContext();
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
    auto step = module.lookupSymbol<func::FuncOp>(stepRef.getValue());
    if (!step || failed(buildWrapper(module, step, inputsOf("step"), "het_step")))
      return signalPassFailure();
    func::FuncOp predict;
    if (auto predictRef = module->getAttrOfType<FlatSymbolRefAttr>("hetrt.predict")) {
      predict = module.lookupSymbol<func::FuncOp>(predictRef.getValue());
      if (!predict || failed(buildWrapper(module, predict, inputsOf("predict"), "het_predict")))
        return signalPassFailure();
    }

    // int main(int argc, char **argv) {
    //   return hetrt_main(argc, argv, het_model_info, het_step, het_predict); }
    auto ptr = LLVM::LLVMPointerType::get(context);
    auto entryType = FunctionType::get(context, {ptr, ptr}, {});
    emitMain(module, info, "hetrt_main", {entryType, ptr},
             [&](OpBuilder &b, Location loc) -> SmallVector<Value> {
               Value stepFn = b.create<func::ConstantOp>(
                   loc, entryType, FlatSymbolRefAttr::get(context, "het_step"));
               Value predictFn;
               if (predict) {
                 Value fn = b.create<func::ConstantOp>(
                     loc, entryType, FlatSymbolRefAttr::get(context, "het_predict"));
                 predictFn = b.create<UnrealizedConversionCastOp>(loc, ptr, fn).getResult(0);
               } else {
                 predictFn = b.create<LLVM::ZeroOp>(loc, ptr);
               }
               return {stepFn, predictFn};
             });
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createEmitEntryPointsPass() {
  return std::make_unique<EmitEntryPointsPass>();
}

namespace mlir::het {
void registerEmitEntryPointsPass() { PassRegistration<EmitEntryPointsPass>(); }
} // namespace mlir::het
