//===- PipelinePrecision.h - the number formats a pipeline is compiled in -*- C++ -*-===//
//
// A plan says per replica group which number format each stage trains in
// (het-plan picks it per device kind: NumberFormats.h). het-compile builds
// the pipeline in those formats: one for the whole job where the stages
// agree, else each layer in its stage's (an fp16 V100 stage beside a bf16
// A100 one), with loss scaling decided job-wide. --precision may repeat a
// plan's format but not contradict it; every disagreement is refused at
// compile time with the stage, group and kind named.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PARTITION_PIPELINEPRECISION_H
#define HET_PARTITION_PIPELINEPRECISION_H

#include "het/Partition/PartitionPlan.h"

#include <string>
#include <vector>

namespace het::partition {

struct PipelineFormats {
  /// The format of the whole job (fp32, tf32, bf16, fp16), or of the
  /// layers `layers` leaves out.
  std::string precision;
  /// Each layer's format where the stages differ (het-autocast
  /// layer-precisions); empty where one format serves all.
  std::vector<std::string> layers;
  /// Per stage whose replicas train in different formats (a stage over an
  /// fp16 kind and a bf16 one; `layers` then holds its first group's), each
  /// replica group's format in the plan's order; empty for stages of one
  /// format, and empty where none differ. Each such stage is built once per
  /// format (BuildPipeline's variants).
  std::vector<std::vector<std::string>> replicaFormats;
  /// The layers that end those stages (but the last): what such a stage
  /// sends leaves it in f32 (het-autocast f32-boundaries), the same type
  /// whichever of its formats computed it.
  std::vector<long> f32Boundaries;
};

/// The formats to compile `plan` in. `requested` is het-compile
/// --precision, `explicitly` whether it was given: then every stage the
/// plan states must be in it and every group's kind must have it; else the
/// plan's formats. Throws PlanError naming the plan file, the stage field,
/// the group and its kind where a stage states another format than
/// --precision, or where --precision asks for a format a kind lacks.
PipelineFormats pipelineFormats(const PartitionPlan &plan, const std::string &requested,
                                bool explicitly);

} // namespace het::partition

#endif
