//===- Report.h - het-plan's tables ---------------------------------------===//
#ifndef HET_TOOLS_HETPLAN_REPORT_H
#define HET_TOOLS_HETPLAN_REPORT_H

#include "het/Plan/CostModel.h"

#include <ostream>
#include <string>

namespace het::plan {

std::string formatBytes(double bytes);
std::string formatSeconds(double seconds);
/// The per-layer costs of a model.
void printModel(std::ostream &os, const ModelDesc &model);
/// The per-stage table of one plan.
void printPlan(std::ostream &os, const CostModel &cost, const Plan &plan,
               const Evaluation &ev);

} // namespace het::plan

#endif
