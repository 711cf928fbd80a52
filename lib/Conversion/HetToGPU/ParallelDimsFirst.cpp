//===- ParallelDimsFirst.cpp - a GPU kernel's threads need parallel loops --===//
//
// The CPU code generator orders a contraction's loops for vector units:
// C[i,j] += A[i,k] * B[k,j] iterates (i, k, j), so the innermost loop runs
// along rows of B and C; a weight gradient dW[j,k] = sum_i dY[i,j] X[i,k]
// starts with its reduction. convert-linalg-to-parallel-loops makes only
// the parallel loops before the first reduction an scf.parallel, so on a
// GPU the first became one thread per block looping over j, and the
// second a single thread doing the whole gradient (measured on an H200,
// 2026-12-04: 50-110 ms per launch). For the GPU every linalg op's loops
// are interchanged to put the parallel dimensions first (in their order)
// and the reductions last, so each thread computes one output element.
//
//===----------------------------------------------------------------------===//

#include "het/Conversion/GPU.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::het;

namespace {

/// The interchange that puts `op`'s parallel loops first, or an empty
/// vector when they already are.
SmallVector<unsigned> parallelFirst(linalg::LinalgOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> order;
  for (unsigned d = 0; d < iterators.size(); ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      order.push_back(d);
  size_t parallel = order.size();
  for (unsigned d = 0; d < iterators.size(); ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      order.push_back(d);
  for (unsigned p = 0; p < parallel; ++p)
    if (order[p] != p)
      return order;
  return {};
}

struct ParallelDimsFirstPass
    : public PassWrapper<ParallelDimsFirstPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ParallelDimsFirstPass)
  StringRef getArgument() const override { return "het-gpu-parallel-dims-first"; }
  StringRef getDescription() const override {
    return "Interchange linalg loops so the parallel dimensions come before the reductions";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, SmallVector<unsigned>>> ops;
    for (func::FuncOp function : gpuFunctions(getOperation()))
      function.walk([&](linalg::LinalgOp op) {
        if (SmallVector<unsigned> order = parallelFirst(op); !order.empty())
          ops.emplace_back(op, std::move(order));
      });
    IRRewriter rewriter(&getContext());
    for (auto &[op, order] : ops) {
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized)) {
          op->emitError("het-gpu-parallel-dims-first: cannot generalize ")
              << op->getName() << " to interchange its loops";
          return signalPassFailure();
        }
        generic = *generalized;
      }
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order))) {
        generic->emitError("het-gpu-parallel-dims-first: cannot interchange the loops");
        return signalPassFailure();
      }
    }
  }
};

} // namespace

std::unique_ptr<Pass> mlir::het::createParallelDimsFirstPass() {
  return std::make_unique<ParallelDimsFirstPass>();
}
