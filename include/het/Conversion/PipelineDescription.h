//===- PipelineDescription.h - what a pipeline's ranks need to know -*- C++ -*-===//
//
// convert-het-to-runtime lowers each stage of a partitioned step into
// functions; this is the description of them that the runtime reads back
// (written into the executable as `het_model_info`, parsed by
// lib/Runtime/ModelInfo.cpp; the text format is documented there):
// the device groups, each stage's layers, tensor-parallel degree and
// replica groups (device kind, kernel library, replicas, share of the
// micro-batch), its schedule, the functions of each of its variants (one
// per distinct share and kernel library) with their inputs and outputs by
// name, the point-to-point channels between stages, and the parameters
// split over tensor-parallel devices.
//
//===----------------------------------------------------------------------===//

#ifndef HET_CONVERSION_PIPELINEDESCRIPTION_H
#define HET_CONVERSION_PIPELINEDESCRIPTION_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::het {

struct PipelineDescription {
  struct Group {
    std::string name;
    int64_t count = 1;
  };
  struct Replicas {
    std::string group, vendor, arch, library; // library "default": compile-wide
    std::string key; // what tells variants apart: the library (and a GPU's arch)
    int64_t count = 1, samples = 0;           // samples 0: unknown (even)
    std::string variant;                      // key of its functions
    int64_t experts = 0; // expert parallelism: experts per replica (0: all)
    int64_t member = -1; // expert parallelism: the replica (a group of one)
  };
  struct Function {
    std::string phase, symbol; // forward | backward | update
    /// "in <name> <type>" / "out <name> <type>" lines.
    std::vector<std::string> inputs, outputs;
    int64_t receives = 0;
  };
  struct Variant {
    std::string key;
    std::vector<Function> functions; // forward, backward, update
  };
  struct Stage {
    std::string name;
    int64_t layerBegin = 0, layerEnd = 0, tensorParallel = 1;
    std::vector<Replicas> replicas;
    std::vector<std::string> order; // F<i> / B<i>
    std::vector<Variant> variants;
  };
  /// A tensor that a stage sends another: both sides agree on it by
  /// (from, to, channel).
  struct Channel {
    int64_t from = 0, to = 0, channel = 0;
    bool backward = false;
    /// Rows of its first dimension per sample of the micro-batch (> 0), 0
    /// when it does not depend on the samples (the same for every replica
    /// forward; a partial sum backward), -1 when unknown (only valid
    /// between stages with the same replicas and shares).
    int64_t rowsPerSample = -1;
    std::string type; // "f32 2 32 64" at the module's shares (not written)
  };
  /// A parameter (or its optimizer state) split over tensor-parallel
  /// devices: device t of a replica holds part t of `parts` along `axis`.
  struct Shard {
    std::string name;
    int64_t axis = 0, parts = 1;
  };

  int64_t microBatches = 1;
  int64_t globalBatch = 0; // 0: the model's batch times the first stage's replicas
  std::string lossCombine = "avg"; // how replicas' losses and gradients combine
  std::vector<std::string> batched; // step inputs with one row per sample
  std::vector<Group> groups;        // the cluster's order
  std::vector<Stage> stages;
  std::vector<Channel> channels;
  std::vector<Shard> shards;
  /// Parameters (and their optimizer state) whose experts (axis 0) the
  /// replicas of an expert-parallel stage hold in blocks of `experts` each,
  /// in replica order (het-expert-parallel).
  std::vector<std::string> expertSharded;
  /// Optimizer state each replica of its stage holds a block of, by batch
  /// share (het-shard-optimizer, ShareBlocks.h).
  std::vector<std::string> shareSharded;
  /// The stages of each het.tied_group (by index), whose ranks sum a tied
  /// parameter's gradient (communicator word 3 + the index).
  std::vector<std::vector<int64_t>> tiedGroups;
  double predictedSeconds = 0;
  std::string planKey; // MeasuredPlans.h; empty: none

  /// The text of `het_model_info` after the step's own lines (`signature`,
  /// describeStep's output).
  std::string text(const std::string &signature) const;
};

} // namespace mlir::het

#endif
