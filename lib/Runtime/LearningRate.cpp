//===- LearningRate.cpp - the learning rate of each step ------------------===//

#include "LearningRate.h"

#include "Arguments.h"

#include <cmath>
#include <cstdio>

using namespace het::rt;

namespace {
LearningRateSchedule current;
long long currentStep = 0;
} // namespace

double LearningRateSchedule::at(double compiled, long long step) const {
  double lr = base > 0 ? base : compiled;
  if (step < warmupSteps)
    return lr * static_cast<double>(step + 1) / static_cast<double>(warmupSteps + 1);
  if (kind == "constant")
    return lr;
  if (step >= decaySteps)
    return minLr;
  double ratio = static_cast<double>(step - warmupSteps) /
                 static_cast<double>(decaySteps - warmupSteps);
  double coefficient = kind == "cosine" ? 0.5 * (1.0 + std::cos(M_PI * ratio)) : 1.0 - ratio;
  return minLr + coefficient * (lr - minLr);
}

bool het::rt::readLearningRateOption(const OptionReader &options,
                                     LearningRateSchedule &schedule) {
  const std::string &arg = options.name(), &value = options.value();
  if (arg == "--lr")
    schedule.base = options.positive();
  else if (arg == "--lr-schedule") {
    if (value != "constant" && value != "cosine" && value != "linear")
      die("option --lr-schedule expects constant, cosine or linear, got '" + value + "'");
    schedule.kind = value;
  } else if (arg == "--warmup-steps")
    schedule.warmupSteps = options.integer(0);
  else if (arg == "--decay-steps")
    schedule.decaySteps = options.integer(1);
  else if (arg == "--min-lr") {
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !(v >= 0) || !std::isfinite(v))
      die("option --min-lr expects a rate of 0 or more, got '" + value + "'");
    schedule.minLr = v;
  } else
    return false;
  return true;
}

std::string het::rt::useLearningRate(LearningRateSchedule schedule, long long steps) {
  if (schedule.decaySteps == 0)
    schedule.decaySteps = steps;
  if (schedule.kind != "constant" && schedule.decaySteps <= schedule.warmupSteps)
    die("the learning rate would decay over no steps: --decay-steps (" +
        std::to_string(schedule.decaySteps) + ", default --steps) must exceed --warmup-steps (" +
        std::to_string(schedule.warmupSteps) + ")");
  if (schedule.base > 0 && schedule.kind != "constant" && schedule.minLr > schedule.base)
    die("option --min-lr is above --lr: the schedule decays from --lr to --min-lr");
  current = schedule;
  currentStep = 0;
  if (schedule.kind == "constant" && schedule.warmupSteps == 0)
    return "";
  char line[256];
  std::string lr = schedule.base > 0 ? std::to_string(schedule.base) : std::string("the compiled rate");
  if (schedule.kind == "constant")
    std::snprintf(line, sizeof line, "learning rate: %s after %lld warm-up steps", lr.c_str(),
                  schedule.warmupSteps);
  else
    std::snprintf(line, sizeof line,
                  "learning rate: %s, %lld warm-up steps, %s decay to %g at step %lld",
                  lr.c_str(), schedule.warmupSteps, schedule.kind.c_str(), schedule.minLr,
                  schedule.decaySteps);
  return line;
}

void het::rt::setLearningRateStep(long long step) { currentStep = step; }

/// Called by every compiled optimizer update with het-compile's rate.
extern "C" double hetrt_learning_rate(double compiled) {
  return current.at(compiled, currentStep);
}
