//===- PlanFailures.h - the failure model of one plan ------------*- C++ -*-===//
//
// How often a plan's devices fail or are preempted, and what a checkpoint
// and a restart cost it: each device at its kind's MTBF, each spot node at
// a preemption rate, a checkpoint's stall the largest per-device state over
// the snapshot bandwidth, its write one copy of the state over the storage
// bandwidth. het-sim and het-plan's hardware-mix recommender share it.
//
//===----------------------------------------------------------------------===//
#ifndef HET_SIM_PLANFAILURES_H
#define HET_SIM_PLANFAILURES_H

#include "het/Plan/CostModel.h"
#include "het/Sim/Reliability.h"

#include <map>
#include <set>
#include <string>

namespace het::sim {

/// Mean time between failures of one accelerator: Meta's Llama 3 run saw
/// 419 unexpected interruptions in 54 days on 16,384 H100s (Dubey et al.,
/// "The Llama 3 Herd of Models", 2024, section 3.3.4): 16384 * 54 * 24 / 419
/// = 50,677 device-hours.
constexpr double kDefaultMtbfHours = 50000;
/// A spot node taken back about once in 140 days: AWS Spot Instance
/// Advisor's "> 20% a month" bucket read as 0.2 / 720 h.
constexpr double kDefaultPreemptionsPerNodeHour = 3e-4;

struct FailureAssumptions {
  double mtbfHours = kDefaultMtbfHours;
  std::map<std::string, double> mtbfOfKind; // catalog name -> hours
  double preemptionsPerNodeHour = kDefaultPreemptionsPerNodeHour;
  double detectSeconds = 30, restartSeconds = 300;
  double snapshotGBs = 25, storageGBs = 20;
};

struct PlanFailures {
  FailureModel model;
  std::map<int, int> devicesOf; // group -> devices the plan uses
  int devices = 0;
  double stateBytes = 0; // one copy of the training state
};

/// The failure model of `plan`; `spot` lists the groups rented as spot
/// capacity (besides those the cluster spec marks).
PlanFailures failureModelOf(const plan::CostModel &cost, const plan::Plan &plan,
                            const std::set<int> &spot, const FailureAssumptions &assumptions);

} // namespace het::sim

#endif
