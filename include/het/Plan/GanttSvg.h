//===- GanttSvg.h - one iteration of a plan as a picture --------*- C++ -*-===//
#ifndef HET_PLAN_GANTTSVG_H
#define HET_PLAN_GANTTSVG_H

#include "het/Plan/CostModel.h"

#include <string>
#include <vector>

namespace het::plan {

/// One bar of the chart: stage, interval in seconds, what runs.
struct Box {
  int stage;
  double start, end;
  const char *kind; // "F", "B" or "sync"
  int micro;
};

struct Timeline {
  std::vector<Box> boxes;
  double end = 0;           // the iteration's makespan
  std::vector<double> busy; // compute seconds per stage
};

/// Event simulation of one 1F1B iteration of `plan` with the stage times of
/// `evaluation`: each stage runs its warm-up forwards, then one forward /
/// one backward, then the remaining backwards; a micro-batch starts on a
/// stage once the neighbour finished it and the send arrived; gradient sync
/// and optimizer follow each stage's last backward.
Timeline simulateIteration(const CostModel &cost, const Plan &plan,
                           const Evaluation &evaluation);

/// Simulates one 1F1B iteration of `plan` (forward, backward and sends per
/// micro-batch on every stage, then gradient sync and optimizer) and draws
/// it as an SVG Gantt chart, one row per stage, with the utilization of each
/// device group below.
std::string renderGanttSvg(const CostModel &cost, const Plan &plan,
                           const Evaluation &evaluation);

} // namespace het::plan

#endif
