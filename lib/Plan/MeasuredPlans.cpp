//===- MeasuredPlans.cpp - plans that ran, by their measured time --------===//
#include "het/Plan/MeasuredPlans.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace het::plan {

std::string digestText(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string trainedModelKey(const std::string &inputBytes, const std::string &trainingOptions) {
  return digestText(digestText(inputBytes) + "\n" + trainingOptions);
}

std::string measuredPlanKey(const std::string &modelKey, const nlohmann::json &plan) {
  // What decides the run, not what describes it (the catalog's formats of
  // a group, the model's name, the prediction), as text reads it back: the
  // plan in memory and its file give one key.
  nlohmann::json runs = nlohmann::json::object();
  for (const char *field : {"cluster", "global_batch", "micro_batches", "schedule", "stages"})
    if (plan.contains(field))
      runs[field] = plan[field];
  return modelKey + "-" + digestText(nlohmann::json::parse(runs.dump()).dump());
}

std::string measuredPlanWorkload(const std::string &planKey) { return "plan " + planKey; }

std::string measuredPlanPrefix(const std::string &modelKey) { return "plan " + modelKey + "-"; }

double rankByMeasurement(std::vector<RankedCandidate> &candidates) {
  std::vector<double> ratios;
  for (const RankedCandidate &c : candidates)
    if (c.measuredSeconds && c.predictedSeconds > 0)
      ratios.push_back(*c.measuredSeconds / c.predictedSeconds);
  double ratio = 1;
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    size_t n = ratios.size();
    ratio = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  }
  for (RankedCandidate &c : candidates)
    c.expectedSeconds = c.measuredSeconds ? *c.measuredSeconds : c.predictedSeconds * ratio;
  return ratio;
}

} // namespace het::plan
