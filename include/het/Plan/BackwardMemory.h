//===- BackwardMemory.h - what a training step's backward holds -*- C++ -*-===//
//
// The planner's memory model needs, per layer, what the backward keeps of
// the forward and what it holds while it runs. Both depend on what
// het-compile builds (which gradient rule reads which forward value, what
// het-fuse merges, which casts autocast adds), so they are read off the
// training step itself rather than estimated from the forward's ops.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_BACKWARDMEMORY_H
#define HET_PLAN_BACKWARDMEMORY_H

#include "het/Plan/ModelDesc.h"

#include <vector>

namespace mlir {
class ModuleOp;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace het::plan {

/// Replaces each layer's stash (all its forward results) by what the
/// backward reads of them, and its gradient working set (an estimate from
/// its ops) by what the backward's values hold at once (BackwardMemory):
/// of the analysed function itself when it is a training step, else of the
/// fused step het-autodiff and het-fuse build from it, as
/// het-training-pipeline does (gradients only: the optimizer keeps no
/// activations); for an fp32 model, also as autocast to bf16 builds it
/// (LayerDesc::lowPrecision). A model those passes cannot take keeps the
/// forward's estimates.
void memoryFromBackward(mlir::ModuleOp module, ModelDesc &m);

/// What a differentiated step's backward holds, per layer and sample.
struct BackwardMemory {
  /// The layer's forward results that the backward reads (what a pipeline
  /// stage keeps as saved.* between its forward and backward functions),
  /// of which `passed` only later layers' backward reads, and per layer
  /// what a stage starting there keeps of earlier layers' results
  /// (LayerDesc).
  std::vector<double> stash, passed, input;
  /// The most the backward's own values (activation gradients and the
  /// like, not the parameters' gradients it returns) hold at once while
  /// the layer's backward ops run: each op's operands and results together.
  std::vector<double> working;
  /// The forward work the backward does again (het-recompute's clones,
  /// `het.recomputed`), per layer and sample: FLOPs, and bytes read and
  /// written.
  std::vector<double> recomputedFlops, recomputedBytes;
};

/// `step`'s backward memory per layer and sample (of `layers` layers, the
/// batch `batch`): forward ops are those before the step's first gradient
/// op, in the body's order; the rest is the backward. Empty when the step
/// has no gradient op.
BackwardMemory analyzeBackward(mlir::func::FuncOp step, size_t layers, double batch);

} // namespace het::plan

#endif
