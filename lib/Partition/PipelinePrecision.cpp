//===- PipelinePrecision.cpp - the number formats a pipeline is compiled in -===//
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

std::string listOf(const std::vector<std::string> &formats) {
  std::string out;
  for (const std::string &f : formats)
    out += (out.empty() ? "" : ", ") + f;
  return out;
}
} // namespace

PipelineFormats pipelineFormats(const PartitionPlan &plan, const std::string &requested,
                                bool explicitly) {
  PipelineFormats out;
  out.precision = requested;
  if (explicitly) {
    const std::string wanted = storageFormat(requested);
    for (const StageInfo &stage : plan.stages)
      for (const ReplicaGroupInfo &r : stage.replicaGroups) {
        if (!r.precision.empty() && storageFormat(r.precision) != wanted)
          fail(plan.file, r.field + ".precision",
               describe(plan, stage, r) + " trains in " + r.precision +
                   " by the plan, but --precision asks for " + requested +
                   " (leave --precision out to compile in the plan's formats, or plan with "
                   "het-plan --precision " + requested + ")");
        const GroupInfo *g = plan.group(r.group);
        if (g && !g->formats.empty() &&
            std::find(g->formats.begin(), g->formats.end(), wanted) == g->formats.end())
          fail(plan.file, r.field,
               describe(plan, stage, r) + " has no " + wanted + ", which --precision " +
                   requested + " asks for (the kind has " + listOf(g->formats) + ")");
      }
    return out;
  }
  // Each stage's format ("" where the plan states none): its replicas'
  // one, or, where they differ (a stage over an fp16 kind and a bf16 one),
  // its first group's, with every format its replicas train in kept.
  std::vector<std::string> stageFormats;
  bool mixed = false;
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StageInfo &stage = plan.stages[j];
    std::vector<std::string> formats, each;
    for (const ReplicaGroupInfo &r : stage.replicaGroups) {
      std::string format = storageFormat(r.precision.empty() ? requested : r.precision);
      each.push_back(format);
      if (std::find(formats.begin(), formats.end(), format) == formats.end())
        formats.push_back(format);
    }
    stageFormats.push_back(stage.replicaGroups.empty() ? "" : stage.replicaGroups.front().precision);
    if (formats.size() > 1) {
      stageFormats.back() = formats.front();
      out.replicaFormats.resize(plan.stages.size());
      out.replicaFormats[j] = each;
      if (stage.layerEnd < plan.stages.back().layerEnd)
        out.f32Boundaries.push_back(stage.layerEnd);
      mixed = true;
    }
  }
  std::vector<std::string> stated;
  for (const std::string &f : stageFormats)
    if (!f.empty() && std::find(stated.begin(), stated.end(), f) == stated.end())
      stated.push_back(f);
  if (stated.empty())
    return out;
  bool uniform = !mixed && stated.size() == 1 &&
                 std::none_of(stageFormats.begin(), stageFormats.end(),
                              [](const std::string &f) { return f.empty(); });
  if (uniform) {
    out.precision = stated.front();
    return out;
  }
  // Stages of different formats: each layer in its stage's (stages the
  // plan states nothing for in `requested`).
  for (size_t j = 0; j < plan.stages.size(); ++j) {
    const StageInfo &stage = plan.stages[j];
    if (out.layers.size() < size_t(stage.layerEnd))
      out.layers.resize(stage.layerEnd, storageFormat(requested));
    for (long l = stage.layerBegin; l < stage.layerEnd; ++l)
      out.layers[l] = stageFormats[j].empty() ? storageFormat(requested) : stageFormats[j];
  }
  return out;
}

} // namespace het::partition
