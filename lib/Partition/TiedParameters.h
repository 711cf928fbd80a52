//===- TiedParameters.h - one parameter read by several stages -*- C++ -*-===//
//
// A language model's token embedding and output head share one matrix
// (GPT-2, LLaMA with tie_word_embeddings). A pipeline puts them at its two
// ends, so the parameter is read by two stages. As Megatron does with its
// embedding group, each of those stages keeps a copy of the parameter and
// of its optimizer state and computes the part of the gradient its own
// layers make; the parts, accumulated over the micro-batches like any
// gradient, are summed once per step by one all-reduce over every rank of
// those stages (a het.tied_group), and each copy takes the same update, so
// the copies stay equal. Nothing tied crosses between stages per
// micro-batch.
//
//===----------------------------------------------------------------------===//
#ifndef HET_LIB_PARTITION_TIEDPARAMETERS_H
#define HET_LIB_PARTITION_TIEDPARAMETERS_H

#include "het/Partition/PartitionPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace het::partition {

struct TiedParameter {
  std::vector<int> stages;        // the stages whose layers read it, in order
  std::map<int, mlir::Value> partials; // each stage's part of its gradient
};

struct TiedParameters {
  std::vector<TiedParameter> ties;
  /// Every stage's partial gradient -> its tie (an index into `ties`).
  llvm::DenseMap<mlir::Value, size_t> tieOfPartial;
  /// The copies of the optimizer updates (and of loss scaling's selects
  /// that keep their old values) made for the stages other than the
  /// update's own: not part of the backward pass.
  llvm::DenseSet<mlir::Operation *> updateCopies;
  /// A returned value of the step (by result index) -> its copy in each
  /// other stage that holds the parameter.
  std::map<unsigned, std::vector<std::pair<int, mlir::Value>>> resultCopies;

  /// The tie whose gradient `source` is (a partial sum, or an unscaled copy
  /// of one): its index, or -1.
  int tieOfGradient(mlir::Value source) const;
};

/// Finds the parameters of `step` whose layers lie in several of `plan`'s
/// stages (`stageOf`: the stage of each layered op) and rewrites the step
/// as described above: the sum of the gradient's parts becomes one partial
/// sum per stage (layered there; `stageOf` is updated), and the update is
/// copied into each stage but its own. Refused, naming the parameter and
/// the stages, where the exchange would be wrong: a parameter split over
/// tensor-parallel devices (`tensorParallelSplit`) or in a stage with
/// tensor parallelism, replicas that average rather than sum their
/// gradients (`lossWeighted` false), a step without an optimizer update of
/// it, or parts not summed as het-autodiff sums them.
mlir::FailureOr<TiedParameters>
tieParameters(mlir::func::FuncOp step, const PartitionPlan &plan,
              std::map<mlir::Operation *, int> &stageOf, bool lossWeighted,
              const std::set<std::string> &tensorParallelSplit);

} // namespace het::partition

#endif
