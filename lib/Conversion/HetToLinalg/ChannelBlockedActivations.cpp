//===- ChannelBlockedActivations.cpp - activations kept in oneDNN's layout -===//
//
// oneDNN's convolutions and batch norm run on channel-blocked activations
// ([N, C/b, H, W, b]); given row-major NCHW they reorder every input in and
// every output back, about a third of a small CNN's training step. This
// pass finds the activations that never leave such calls -- produced by a
// convolution, batch norm or pooling, read only by them (and by their
// gradients) -- and marks them, so that the runtime keeps them blocked from
// the call that writes them to the calls that read them:
//
//   %y = het.conv2d %x, %w {hetrt.channel_blocked = array<i1: false, false, true>}
//
// one flag per operand then result of each call. A value is marked on its
// producer and on every user, so all agree. Only 4-D f32 activations of a
// multiple of 16 channels are marked: the block is the CPU's (16 with
// AVX-512, 8 below; lib/Runtime/ChannelBlock.h), and both divide 16, so a
// marked buffer has its row-major size everywhere. Anything else touching
// a value -- generated code, a return, a pipeline send, an outlined call --
// keeps it row-major. Only functions whose kernels are oneDNN's get marks;
// het-outline-layers runs after this pass and sees the marks as part of
// each op, so runs that differ in layout do not share a function.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// Every block size the runtime may choose divides this.
constexpr int64_t kChannelMultiple = 16;

/// Whether `op`'s operand `index` is an activation its runtime kernel reads
/// in either layout.
bool readsEitherLayout(Operation *op, unsigned index) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<Conv2dOp, Conv2dGradInputOp, BatchNormOp, BatchNormReluOp, MaxPool2dOp, AvgPool2dOp,
            AvgPool2dGradOp>([&](auto) { return index == 0; })   // x or dy
      .Case<Conv2dGradFilterOp, BatchNormGradOp, MaxPool2dGradOp>( // dy, x
          [&](auto) { return index <= 1; })
      .Case<BatchNormReluGradOp>([&](auto) { return index <= 2; }) // dy, y, x
      .Default([](Operation *) { return false; });
}

/// Whether `op`'s result `index` is an activation its kernel writes in
/// either layout.
bool writesEitherLayout(Operation *op, unsigned index) {
  return index == 0 &&
         isa<Conv2dOp, Conv2dGradInputOp, BatchNormOp, BatchNormReluOp, BatchNormGradOp,
             BatchNormReluGradOp, MaxPool2dOp, AvgPool2dOp, MaxPool2dGradOp, AvgPool2dGradOp>(op);
}

bool staysBlocked(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() || type.getRank() != 4 || !type.getElementType().isF32() ||
      type.getDimSize(1) % kChannelMultiple != 0)
    return false;
  auto result = dyn_cast<OpResult>(value);
  if (!result || !writesEitherLayout(result.getOwner(), result.getResultNumber()))
    return false;
  return llvm::all_of(value.getUses(), [](OpOperand &use) {
    return readsEitherLayout(use.getOwner(), use.getOperandNumber());
  });
}

struct ChannelBlockedActivationsPass
    : public PassWrapper<ChannelBlockedActivationsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ChannelBlockedActivationsPass)

  ChannelBlockedActivationsPass() = default;
  ChannelBlockedActivationsPass(const ChannelBlockedActivationsPass &other)
      : PassWrapper(other) {}
  explicit ChannelBlockedActivationsPass(KernelLibrary library) {
    this->library = kernelLibraryName(library).str();
  }

  StringRef getArgument() const override { return "het-channel-blocked-activations"; }
  StringRef getDescription() const override {
    return "Mark the activations only oneDNN convolutions, batch norms and pooling touch as "
           "channel-blocked (hetrt.channel_blocked), so the runtime does not reorder them "
           "around every call";
  }

  Option<std::string> library{
      *this, "library",
      llvm::cl::desc("the kernels of functions without a het.kernel_library attribute; only "
                     "dnnl functions are marked"),
      llvm::cl::init("dnnl")};

  void runOnOperation() override {
    std::optional<KernelLibrary> fallback = parseKernelLibrary(library);
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      std::optional<KernelLibrary> kernels = fallback;
      if (auto name = function->getAttrOfType<StringAttr>(kKernelLibraryAttr))
        kernels = parseKernelLibrary(name.getValue()); // a bad name is convert-het-to-linalg's error
      if (kernels != KernelLibrary::Dnnl)
        continue;
      // Decided once per value, at its producer; then each op's flags.
      llvm::DenseSet<Value> blocked;
      function.walk([&](Operation *op) {
        for (OpResult result : op->getResults())
          if (staysBlocked(result))
            blocked.insert(result);
      });
      if (blocked.empty())
        continue;
      function.walk([&](Operation *op) {
        if (!isa<HetDialect>(op->getDialect()))
          return;
        SmallVector<bool> flags;
        for (Value value : op->getOperands())
          flags.push_back(blocked.contains(value));
        for (Value value : op->getResults())
          flags.push_back(blocked.contains(value));
        if (llvm::is_contained(flags, true))
          op->setAttr(kChannelBlockedAttr, DenseBoolArrayAttr::get(&getContext(), flags));
      });
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createChannelBlockedActivationsPass(KernelLibrary library) {
  return std::make_unique<ChannelBlockedActivationsPass>(library);
}

namespace mlir::het {
void registerChannelBlockedActivationsPass() {
  PassRegistration<ChannelBlockedActivationsPass>();
}
} // namespace mlir::het
