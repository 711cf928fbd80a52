//===- GanttSvg.cpp - draw one simulated 1F1B iteration -------------------===//
//
// The planner scores plans with the closed form sum(t) + (m-1) max(t); this
// picture comes from the event simulation of the same stage times
// (IterationSimulation.cpp), so bubbles show where they really are.
//
//===----------------------------------------------------------------------===//
#include "het/Plan/GanttSvg.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace het::plan {

namespace {
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}
} // namespace

std::string renderGanttSvg(const CostModel &cost, const Plan &plan,
                           const Evaluation &ev) {
  Timeline timeline = simulateIteration(cost, plan, ev);
  char title[160];
  std::snprintf(title, sizeof title, "simulated %.1f ms (predicted %.1f ms)",
                timeline.end * 1e3, ev.iterationTime * 1e3);
  return renderTimelineSvg(cost, plan, timeline, title);
}

std::string renderTimelineSvg(const CostModel &cost, const Plan &plan, const Timeline &timeline,
                              const std::string &title) {
  const int S = int(plan.stages.size());
  const int m = plan.microBatches;
  const double end = timeline.end;
  const std::vector<double> &busy = timeline.busy;
  const std::vector<Box> &boxes = timeline.boxes;

  const double width = 1000, left = 150, rowH = 28, top = 40;
  const double scale = end > 0 ? width / end : 1;
  std::ostringstream svg;
  double height = top + rowH * S + 40 + 22 * cost.cluster().groups.size() + 20;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << left + width + 20 << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<text x=\"10\" y=\"20\">one 1F1B iteration: " << S << " stages, " << m
      << " micro-batches, " << title << ". F forward (blue), B backward (green), busy stretches of "
         "many passes (teal), gradient sync + optimizer (orange), idle "
         "(white)</text>\n";
  for (int j = 0; j < S; ++j) {
    const StagePlan &s = plan.stages[j];
    double y = top + rowH * j;
    std::string groups;
    for (const ReplicaGroupPlan &g : s.replicaGroups)
      groups += (groups.empty() ? "" : "+") + cost.cluster().groups[g.group].name;
    svg << "<text x=\"5\" y=\"" << y + 18 << "\">s" << j << " " << groups << " ["
        << s.layerBegin << "," << s.layerEnd << ")</text>\n";
    svg << "<rect x=\"" << left << "\" y=\"" << y + 2 << "\" width=\"" << width
        << "\" height=\"" << rowH - 4
        << "\" fill=\"white\" stroke=\"#ccc\"/>\n";
  }
  auto rect = [&](int stage, double from, double to, const char *color,
                  const std::string &title) {
    double x = left + from * scale, w = std::max(0.5, (to - from) * scale);
    svg << "<rect x=\"" << fmt(x) << "\" y=\"" << top + rowH * stage + 2
        << "\" width=\"" << fmt(w) << "\" height=\"" << rowH - 4 << "\" fill=\""
        << color << "\" stroke=\"white\" stroke-width=\"0.5\"><title>" << title
        << "</title></rect>\n";
  };
  // With hundreds of micro-batches the passes are a pixel or two wide: then
  // passes with less than a pixel between them are drawn as one busy bar,
  // so the file stays small and the picture the same at this resolution.
  const double pixel = 1.0 / scale;
  const bool merge = boxes.size() > 4 * width;
  std::vector<const Box *> sorted;
  for (const Box &b : boxes)
    sorted.push_back(&b);
  std::stable_sort(
      sorted.begin(), sorted.end(), [](const Box *a, const Box *b) {
        return a->stage != b->stage ? a->stage < b->stage : a->start < b->start;
      });
  for (size_t i = 0; i < sorted.size();) {
    const Box &b = *sorted[i];
    std::string kind = b.kind;
    if (kind == "sync" || !merge) {
      const char *color = kind == "F"   ? "#4e79a7"
                          : kind == "B" ? "#59a14f"
                                        : "#f28e2b";
      rect(b.stage, b.start, b.end, color,
           kind +
               (kind == "sync" ? ""
                               : " micro-batch " + std::to_string(b.micro)) +
               ": " + fmt(b.start * 1e3) + "-" + fmt(b.end * 1e3) + " ms");
      ++i;
      continue;
    }
    size_t j = i + 1;
    double runEnd = b.end;
    while (j < sorted.size() && sorted[j]->stage == b.stage &&
           std::string(sorted[j]->kind) != "sync" &&
           sorted[j]->start - runEnd < pixel) {
      runEnd = sorted[j]->end;
      ++j;
    }
    rect(b.stage, b.start, runEnd, "#52907b",
         std::to_string(j - i) + " forward/backward passes: " +
             fmt(b.start * 1e3) + "-" + fmt(runEnd * 1e3) + " ms");
    i = j;
  }
  // Utilization: busy compute time over the iteration, per device group.
  std::map<int, std::pair<double, int>> perGroup;
  for (int j = 0; j < S; ++j)
    for (const ReplicaGroupPlan &g : plan.stages[j].replicaGroups) {
      perGroup[g.group].first += busy[j];
      perGroup[g.group].second += 1;
    }
  double y = top + rowH * S + 30;
  svg << "<text x=\"5\" y=\"" << y
      << "\">utilization per device group (compute "
         "time / iteration time)</text>\n";
  for (const auto &[g, v] : perGroup) {
    y += 22;
    double u = end > 0 ? v.first / v.second / end : 0;
    svg << "<text x=\"5\" y=\"" << y << "\">" << cost.cluster().groups[g].name
        << "</text><rect x=\"" << left << "\" y=\"" << y - 12 << "\" width=\""
        << fmt(width * u) << "\" height=\"14\" fill=\"#76b7b2\"/><text x=\""
        << left + width * u + 5 << "\" y=\"" << y << "\">" << fmt(u * 100)
        << " %</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

} // namespace het::plan
