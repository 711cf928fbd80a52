//===- MeasuredSplit.h - a run's measured split, stage by stage -*- C++ -*-===//
//
// Each rank of a pipeline prints where its step went ("time per step T ms:
// kernels K ms, outside kernels O ms (P%: messages M, collectives C,
// runtime R)") and which stage it runs ("rank k: stage sJ ..."); het-run
// prefixes both with "[rank k]". het-plan --explain --measured LOG puts
// that split, averaged over each stage's ranks, beside the predicted one.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_MEASUREDSPLIT_H
#define HET_PLAN_MEASUREDSPLIT_H

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace het::plan {

struct MeasuredStageSplit {
  int ranks = 0; // the stage's ranks that reported (0: none did)
  // Seconds per step, averaged over those ranks.
  double step = 0, kernels = 0, messages = 0, collectives = 0, runtime = 0;
};

/// Per stage (of `stages`), from het-run's output `text`. Throws PlanError
/// naming `file` when no rank reported a split.
std::vector<MeasuredStageSplit> measuredSplitFromLog(const std::string &text, size_t stages,
                                                     const std::string &file);

nlohmann::json measuredSplitToJson(const std::vector<MeasuredStageSplit> &split);

} // namespace het::plan

#endif
