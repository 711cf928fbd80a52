//===- GanttSvg.h - one iteration of a plan as a picture --------*- C++ -*-===//
#ifndef HET_PLAN_GANTTSVG_H
#define HET_PLAN_GANTTSVG_H

#include "het/Plan/CostModel.h"
#include "het/Plan/IterationSimulation.h"

#include <string>
#include <vector>

namespace het::plan {

/// Simulates one 1F1B iteration of `plan` (forward, backward and sends per
/// micro-batch on every stage, then gradient sync and optimizer) and draws
/// it as an SVG Gantt chart, one row per stage, with the utilization of each
/// device group below.
std::string renderGanttSvg(const CostModel &cost, const Plan &plan,
                           const Evaluation &evaluation);
/// Draws a simulated `timeline` of `plan` the same way; `title` heads it.
std::string renderTimelineSvg(const CostModel &cost, const Plan &plan, const Timeline &timeline,
                              const std::string &title);

} // namespace het::plan

#endif
