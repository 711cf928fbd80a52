//===- Report.h - het-plan's tables ---------------------------------------===//
#ifndef HET_TOOLS_HETPLAN_REPORT_H
#define HET_TOOLS_HETPLAN_REPORT_H

#include "het/Plan/CostModel.h"
#include "het/Plan/Explain.h"
#include "het/Plan/MeasuredSplit.h"
#include "het/Plan/FrequencyScaling.h"
#include "het/Plan/Objective.h"

#include <nlohmann/json_fwd.hpp>

#include <ostream>
#include <string>

namespace het::plan {

std::string formatBytes(double bytes);
std::string formatSeconds(double seconds);
/// The per-layer costs of a model.
void printModel(std::ostream &os, const ModelDesc &model);
/// "fp32 precision", or "mixed precision (bf16 on a100; fp16 with loss
/// scaling on v100)": the format each group trains in.
std::string describeFormats(const CostModel &cost);
/// The per-stage table of one plan.
void printPlan(std::ostream &os, const CostModel &cost, const Plan &plan,
               const Evaluation &ev);

/// --explain: the parts the predicted iteration is made of, and each
/// stage's busy time and idle share.
void printBreakdown(std::ostream &os, const IterationBreakdown &breakdown);
/// A run's measured split per stage (het-plan --measured) beside each
/// stage's predicted busy time.
void printMeasuredSplit(std::ostream &os, const IterationBreakdown &breakdown,
                        const std::vector<MeasuredStageSplit> &split, const std::string &file);

/// "USD 1.23", "4.56 MJ", "12.3 s": an objective's value in its unit.
std::string formatObjective(double value, ObjectiveKind kind);
/// One line: the devices a plan rents, their price per hour and per
/// iteration, and its energy per iteration (where the catalog has them).
void printEconomics(std::ostream &os, const PlanEconomics &economics);
/// The per-stage clocks and the energy they save.
void printFrequencyScaling(std::ostream &os, const FrequencyScaling &scaling,
                           double maxSlowdown);
nlohmann::json economicsToJson(const PlanEconomics &economics);
nlohmann::json frequencyScalingToJson(const FrequencyScaling &scaling, double maxSlowdown);

} // namespace het::plan

#endif
