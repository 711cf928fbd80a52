//===- Explain.h - where a plan's predicted iteration goes ------*- C++ -*-===//
//
// het-plan --explain: the predicted iteration split into the parts that
// add up to it, so that a user sees why one plan beats another (and what to
// change): the bottleneck stage's forward and backward over the
// micro-batches, its sends, the pipeline's fill and drain (every other
// stage's one micro-batch; on shared cores also their turns), and the
// gradient sync and optimizer update after the last backward. Per stage:
// its busy time and how much of the iteration it idles.
//
//===----------------------------------------------------------------------===//

#ifndef HET_PLAN_EXPLAIN_H
#define HET_PLAN_EXPLAIN_H

#include "het/Plan/CostModel.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace het::plan {

struct IterationPart {
  std::string name;  // a key: compute, sends, fill_drain, sync, update, sync_update
  std::string label; // a few words (het-compile's one line)
  std::string what;  // the sentence het-plan prints
  double seconds = 0;
};

struct StageBusy {
  double work = 0;         // micro-batches x (forward + backward)
  double sends = 0;        // micro-batches x sends
  double syncAndUpdate = 0; // once per iteration
  double busy() const { return work + sends + syncAndUpdate; }
};

struct IterationBreakdown {
  std::vector<IterationPart> parts; // they sum to the iteration time
  std::vector<StageBusy> stages;
  double iterationTime = 0;
  /// The share of the iteration stage `j` waits.
  double idleFraction(size_t j) const;
};

/// Splits `ev` (CostModel::evaluate of `plan`) into parts that sum to
/// ev.iterationTime.
IterationBreakdown explainIteration(const Plan &plan, const Evaluation &ev);

nlohmann::json breakdownToJson(const IterationBreakdown &breakdown);

/// One line for het-compile --plan auto: each part's share of the
/// iteration and the stage that idles most, e.g. "s1's forward and backward
/// 61%, its sends 3%, fill and drain 20%, gradient sync 5%, optimizer
/// update 11%; s0 idles 45% of it".
std::string summarizeBreakdown(const IterationBreakdown &breakdown);

} // namespace het::plan

#endif
