//===- Distributed.h - pipelines of compiled stages ---------------*- C++ -*-===//
//
// From a model and a plan to one module whose functions every rank of the
// pipeline needs (lib/Conversion/Distributed):
//
//  * lowerPipelineStages: convert-het-to-runtime's work on one partitioned
//    module (stages -> forward/backward/update functions calling libhetrt);
//  * buildPipeline: het-compile --cluster's driver. Each replica's stage
//    code is specialised to its share of the micro-batch: for every
//    distinct share the forward model is rebatched to it (its loss weighted
//    by the share), differentiated, partitioned and scheduled, and the
//    stages' functions for that share are kept; the variants are merged
//    into one module and one description.
//
//===----------------------------------------------------------------------===//

#ifndef HET_CONVERSION_DISTRIBUTED_H
#define HET_CONVERSION_DISTRIBUTED_H

#include "het/Conversion/PipelineDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::het {

/// How the stages a plan places on GPUs are built.
struct GpuStageOptions {
  bool emulate = false;        // their kernels run on the host (--gpu-emulate)
  bool vendorLibraries = true; // NVIDIA: cuBLAS and cuDNN calls (--gpu-libraries)
};

/// Lowers every stage of `module` (after het-partition and
/// het-pipeline-schedule) into functions, for the replica groups whose share
/// of the micro-batch is `samples` (0: all of them, the bodies being right
/// for each), erases the stages, the cluster and the other functions, and
/// describes the result. Channels are described for every stage. Stages on
/// a GPU get functions marked for the GPU lowering (kGpuTargetAttr), built
/// as `gpu` says.
FailureOr<PipelineDescription> lowerPipelineStages(ModuleOp module, int64_t samples,
                                                   const GpuStageOptions &gpu = {});

struct PipelineBuildOptions {
  std::string planFile;            // a plan JSON (docs/planner.md)
  std::string trainingPipeline;    // het-training-pipeline{...} options text
  /// Each layer's format (het-autocast layer-precisions, added to
  /// trainingPipeline per build); empty: trainingPipeline's `precision`.
  std::vector<std::string> layerFormats;
  /// Per stage whose replicas train in different formats, each replica
  /// group's format (PipelineFormats::replicaFormats; empty for the
  /// others): the model is built once per such format with those stages'
  /// layers in it, and each replica group runs the build of its format.
  std::vector<std::vector<std::string>> replicaFormats;
  std::string schedule = "1f1b";   // 1f1b | gpipe
  int64_t microBatches = 0;        // 0: the plan's micro_batches
  std::string compression = "none"; // of the gradient all-reduces
  /// Sharded data parallelism over each stage's replicas: 0 none, 1 the
  /// optimizer state in blocks by batch share, 2 and the gradients, 3 and
  /// the parameters (het-shard-optimizer's level); -1: each stage's
  /// `zero` in the plan.
  int zeroStage = -1;
  double predictedSeconds = 0;     // the planner's iteration time, 0: none
  std::string planKey;             // MeasuredPlans.h: under which het-run records the time
  GpuStageOptions gpu;             // how stages on GPUs are built
  /// When set, each share's partitioned and scheduled module (het dialect,
  /// compression applied) is printed here before it is lowered: what
  /// `het-compile --emit=stages` shows.
  llvm::raw_ostream *stagesOutput = nullptr;
};

/// het-compile --cluster: `input` holds the forward model (a function
/// returning its loss) or, for plans that need no specialisation, a
/// training step. Returns the merged module, ready for lowering to LLVM,
/// with `hetrt.model_info` set. Errors are diagnostics on `input` that name
/// the plan file, stage and field.
FailureOr<OwningOpRef<ModuleOp>> buildPipeline(ModuleOp input, const PipelineBuildOptions &options);

/// Reads a --compression value (none, fp16, bf16, int8, topk:<ratio>) into
/// the het compression kind (an int, CompressionKind's value) and top-k
/// ratio; false with `error` set when it is none of them.
bool parseCompression(const std::string &text, int &kind, double &ratio, std::string &error);

} // namespace mlir::het

#endif
