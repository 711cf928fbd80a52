//===- PipelineSchedule.h - micro-batch orders of pipeline schedules -*- C++ -*-===//
#ifndef HET_PARTITION_PIPELINESCHEDULE_H
#define HET_PARTITION_PIPELINESCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace het::partition {

enum class PipelineSchedule { OneForwardOneBackward, GPipe };

/// The order in which stage `stage` of `stages` runs its passes: "F<i>" is
/// the forward pass of micro-batch i, "B<i>" its backward pass.
std::vector<std::string> pipelineOrder(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                       int64_t microBatches);

} // namespace het::partition

#endif
