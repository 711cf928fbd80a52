//===- CheckGpuLowerable.cpp - ops a GPU build cannot compile yet ----------===//
//
// With the `mlir` kernel library, convert-het-to-linalg generates linalg for
// matmul, linear layers, convolutions and every element-wise, reduction,
// normalization-row and optimizer op; the rest (batch norm, pooling,
// embeddings, dropout) still call libhetrt's host kernels. A GPU build
// cannot call those from a kernel, so each such call is an error at the op
// it came from, naming the op, instead of a code object that would read
// device memory on the host.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// Host helpers a step calls around its kernels, not instead of them: the
/// learning rate the executable may override, the range checks of labels
/// and token ids, and a pipeline stage's messages and collectives (host
/// calls on buffers both sides can read: every launch has finished when
/// the host goes on).
bool isHostHelper(StringRef callee) {
  static const StringRef helpers[] = {
      "hetrt_learning_rate", "hetrt_check_labels", "hetrt_check_indices", "hetrt_send",
      "hetrt_recv",          "hetrt_all_reduce",   "hetrt_all_gather",    "hetrt_reduce_scatter",
      "hetrt_shard",         "hetrt_random_step",   "hetrt_random_first_sample"};
  // Vendor libraries' calls (cuDNN, cuBLAS) run on the GPU's stream.
  return llvm::is_contained(helpers, callee) || callee.starts_with("hetrt_cudnn_") ||
         callee.starts_with("hetrt_cublas_");
}

struct CheckGpuLowerablePass
    : public PassWrapper<CheckGpuLowerablePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckGpuLowerablePass)
  StringRef getArgument() const override { return "het-gpu-check-lowerable"; }
  StringRef getDescription() const override {
    return "Reject ops that still lower to libhetrt host kernels in a GPU build";
  }
  void runOnOperation() override {
    bool failed = false;
    for (func::FuncOp function : gpuFunctions(getOperation()))
      function.walk([&](func::CallOp call) {
        StringRef callee = call.getCallee();
        if (!callee.starts_with("hetrt_") || isHostHelper(callee))
          return;
        // hetrt_ref_<op> / hetrt_dnnl_<op>: the het op is what follows.
        StringRef op = callee.drop_front(StringRef("hetrt_").size());
        op = op.substr(op.find('_') + 1);
        call.emitError("het-compile: het.")
            << op << " has no GPU lowering yet (on CPUs it runs the host kernel " << callee
            << "); see docs/gpu.md for the ops GPU builds generate";
        failed = true;
      });
    if (failed)
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createCheckGpuLowerablePass() {
  return std::make_unique<CheckGpuLowerablePass>();
}
