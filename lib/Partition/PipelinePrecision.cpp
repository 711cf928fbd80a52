//===- PipelinePrecision.cpp - the number format a pipeline is compiled in -===//
#include "het/Partition/PipelinePrecision.h"

#include "het/Plan/Error.h"

#include <algorithm>

namespace het::partition {
using het::plan::fail;

namespace {
/// tf32 is fp32 storage with tf32 products: a plan states it as fp32 on
/// kinds without tf32.
std::string storageFormat(const std::string &format) {
  return format == "tf32" ? "fp32" : format;
}

std::string describe(const PartitionPlan &plan, const StageInfo &stage,
                     const ReplicaGroupInfo &r) {
  const GroupInfo *g = plan.group(r.group);
  std::string kind = g && !g->kind.empty() ? g->kind : g ? g->vendor + "/" + g->arch : "?";
  return "stage " + stage.name + " (group '" + r.group + "', kind " + kind + ")";
}
} // namespace

std::string pipelinePrecision(const PartitionPlan &plan, const std::string &requested,
                              bool explicitly) {
  std::string stated;
  const StageInfo *statedStage = nullptr;
  const ReplicaGroupInfo *statedGroup = nullptr;
  for (const StageInfo &stage : plan.stages)
    for (const ReplicaGroupInfo &r : stage.replicaGroups) {
      const GroupInfo *g = plan.group(r.group);
      if (explicitly) {
        if (!r.precision.empty() && storageFormat(r.precision) != storageFormat(requested))
          fail(plan.file, r.field + ".precision",
               describe(plan, stage, r) + " trains in " + r.precision +
                   " by the plan, but --precision asks for " + requested +
                   " (leave --precision out to compile in the plan's format, or plan with "
                   "het-plan --precision " + requested + ")");
        const std::string wanted = storageFormat(requested);
        if (g && !g->formats.empty() &&
            std::find(g->formats.begin(), g->formats.end(), wanted) == g->formats.end()) {
          std::string has;
          for (const std::string &f : g->formats)
            has += (has.empty() ? "" : ", ") + f;
          fail(plan.file, r.field,
               describe(plan, stage, r) + " has no " + wanted + ", which --precision " +
                   requested + " asks for (the kind has " + has + ")");
        }
        continue;
      }
      if (r.precision.empty())
        continue;
      if (stated.empty()) {
        stated = r.precision;
        statedStage = &stage;
        statedGroup = &r;
      } else if (r.precision != stated) {
        fail(plan.file, r.field + ".precision",
             describe(plan, stage, r) + " trains in " + r.precision + " but " +
                 describe(plan, *statedStage, *statedGroup) + " in " + stated +
                 "; het-compile builds a pipeline in one format so far (plan it with "
                 "het-plan --precision bf16, fp16 or fp32)");
      }
    }
  return explicitly || stated.empty() ? requested : stated;
}

} // namespace het::partition
