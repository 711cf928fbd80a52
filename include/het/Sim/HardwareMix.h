//===- HardwareMix.h - which devices to rent, at the least cost -*- C++ -*-===//
//
// Given an inventory (het/Plan/Inventory.h) and a deadline per iteration,
// recommends what to rent: for every mix of node counts (1, 2, 4, ... up to
// what is offered) and markets per offer, the planner's cheapest plan under
// the deadline (it may leave offers out: those are not rented); plans on
// spot capacity are charged their preemptions, restarts and lost work as
// het-sim's run simulation measures them (goodput: the expected iteration
// time is time / goodput). Mixes are visited cheapest lower bound first and
// the search stops when the bound reaches the best expected cost found.
//
//===----------------------------------------------------------------------===//
#ifndef HET_SIM_HARDWAREMIX_H
#define HET_SIM_HARDWAREMIX_H

#include "het/Plan/Inventory.h"
#include "het/Plan/Planner.h"
#include "het/Sim/PlanFailures.h"

#include <memory>
#include <string>
#include <vector>

namespace het::sim {

struct MixOptions {
  /// Global batch, search options; objective.deadlineSeconds is the target
  /// (required), the objective kind is cost.
  plan::PlannerOptions planner;
  plan::TrainingSetup setup;
  FailureAssumptions failures;
  double horizonHours = 168; // of each simulated run on spot capacity
  int trials = 8;
  uint64_t seed = 1;
  int keep = 5; // mixes to report
  /// Skip mixes whose bounds show they cannot meet the deadline or beat the
  /// mixes kept (false: plan every mix; the tests check the bounds so).
  bool prune = true;
};

struct MixChoice {
  std::string description; // "16 x RTX-4090 (spot) + 8 x L40S (spot)"
  bool spot = false;       // rents spot capacity
  std::shared_ptr<plan::Cluster> cluster; // what is rented (the plan's groups index it)
  nlohmann::json clusterSpec;
  plan::Plan plan;
  plan::Evaluation evaluation;
  plan::PlanEconomics economics;
  double goodput = 1;
  double expectedSeconds = 0; // per iteration, preemptions included
  double expectedCost = 0;    // USD per iteration, preemptions included
  /// The bounds its mix was ranked and pruned by: never above the
  /// evaluated iteration time and cost.
  double timeBound = 0, costBound = 0;
};

struct MixResult {
  std::vector<MixChoice> best; // least expected cost first, distinct rentals
  std::vector<MixChoice> onDemandOnly; // the same search without spot (best first)
  long mixes = 0;                      // in the space
  long planned = 0, plannedOnDemand = 0; // by each search before the bound stopped it
  double seconds = 0;
};

MixResult recommendMix(const plan::Inventory &inventory, const plan::ModelDesc &model,
                       const plan::DeviceCatalog &catalog, const MixOptions &options);

} // namespace het::sim

#endif
