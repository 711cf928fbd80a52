//===- RankBinding.h - a pipeline rank's CPUs, by its place in the plan -*- C++ -*-===//
//
// het-run binds ranks by local rank (het/Support/CoreBinding.h). Under
// --cluster it numbers them device group by device group, idle devices
// included, so that order may put both replicas of a mixed stage, or two
// working ranks beside idle ones, on one core. A pipeline rank knows the
// plan: it binds itself again as the index of its place among the working
// ranks taken stage by stage (replica groups, replicas, tensor-parallel
// devices in the plan's order), idle ranks after them -- the order the
// planner's shared-core schedule assumes (CostModel::sharedHostStages).
//
//===----------------------------------------------------------------------===//
#ifndef HET_RUNTIME_RANKBINDING_H
#define HET_RUNTIME_RANKBINDING_H

#include "PipelineLayout.h"

#include <string>

namespace het::rt {

/// `rank`'s index in the binding order of `layout`'s ranks: working ranks
/// stage by stage, then idle ones.
int bindingIndex(const PipelineLayout &layout, int rank);

/// When het-run bound this rank (HET_BIND_CPUS lists the job's CPUs) and
/// every rank of the job runs on this host: binds it by bindingIndex.
/// Returns "" or a warning.
std::string bindByPlace(const PipelineLayout &layout, int rank, int worldSize);

} // namespace het::rt

#endif
