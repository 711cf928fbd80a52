//===- PipelinePrecision.h - the number format a pipeline is compiled in -*- C++ -*-===//
//
// A plan says per replica group which number format each stage trains in
// (het-plan picks it per device kind: NumberFormats.h). het-compile builds
// a pipeline in one format so far, so the plan's formats and --precision
// must agree on one; every disagreement is refused at compile time with
// the stage, group and kind named.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PARTITION_PIPELINEPRECISION_H
#define HET_PARTITION_PIPELINEPRECISION_H

#include "het/Partition/PartitionPlan.h"

#include <string>

namespace het::partition {

/// The format to compile `plan` in: `requested` (het-compile --precision:
/// fp32, tf32, bf16, fp16) when `explicitly` given, else the one format
/// the plan's stages state, else `requested`. Throws PlanError naming the
/// plan file, the stage field, the group and its kind where a stage states
/// another format than --precision, where stages state different formats,
/// or where --precision asks for a format a stage's kind lacks.
std::string pipelinePrecision(const PartitionPlan &plan, const std::string &requested,
                              bool explicitly);

} // namespace het::partition

#endif
