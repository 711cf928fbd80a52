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
};

/// The formats to compile `plan` in. `requested` is het-compile
/// --precision, `explicitly` whether it was given: then every stage the
/// plan states must be in it and every group's kind must have it; else the
/// plan's formats. Throws PlanError naming the plan file, the stage field,
/// the group and its kind where a stage states another format than
/// --precision, where the replicas of one stage differ in format (not
/// built yet), or where --precision asks for a format a kind lacks.
PipelineFormats pipelineFormats(const PartitionPlan &plan, const std::string &requested,
                                bool explicitly);

} // namespace het::partition

#endif
