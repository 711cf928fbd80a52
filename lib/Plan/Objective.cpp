//===- Objective.cpp - time, cost and energy of a plan ----------------------===//
#include "het/Plan/Objective.h"
#include "het/Plan/Error.h"

#include <cmath>
#include <cstdio>

namespace het::plan {

const char *toString(ObjectiveKind kind) {
  switch (kind) {
  case ObjectiveKind::Time:
    return "time";
  case ObjectiveKind::Cost:
    return "cost";
  case ObjectiveKind::Energy:
    return "energy";
  }
  return "time";
}

bool parseObjectiveKind(const std::string &text, ObjectiveKind &out) {
  for (ObjectiveKind k : {ObjectiveKind::Time, ObjectiveKind::Cost, ObjectiveKind::Energy})
    if (text == toString(k)) {
      out = k;
      return true;
    }
  return false;
}

const char *unitOf(ObjectiveKind kind) {
  switch (kind) {
  case ObjectiveKind::Time:
    return "s";
  case ObjectiveKind::Cost:
    return "USD";
  case ObjectiveKind::Energy:
    return "J";
  }
  return "s";
}

bool withinDeadline(double seconds, const Objective &objective) {
  return objective.deadlineSeconds <= 0 || seconds <= objective.deadlineSeconds * (1 + 1e-12);
}

bool withinBudget(double pricePerHour, const Objective &objective) {
  return objective.budgetPerHour <= 0 || pricePerHour <= objective.budgetPerHour * (1 + 1e-12);
}

double busyWatts(const DeviceSpec &spec) { return spec.power.tdpWatts; }

double idleWatts(const DeviceSpec &spec) {
  return spec.power.idleWatts > 0 ? spec.power.idleWatts
                                  : kDefaultIdleFraction * spec.power.tdpWatts;
}

bool idleAssumed(const DeviceSpec &spec) {
  return spec.hasPower() && spec.power.idleWatts <= 0;
}

void checkObjectiveInputs(const Cluster &cluster, const Objective &objective) {
  const bool needPrice = objective.kind == ObjectiveKind::Cost || objective.budgetPerHour > 0;
  const bool needPower = objective.kind == ObjectiveKind::Energy;
  for (size_t g = 0; g < cluster.groups.size(); ++g) {
    const DeviceGroup &group = cluster.groups[g];
    const std::string where = "group '" + group.name + "'";
    if (needPrice && group.pricePerHour <= 0)
      fail(cluster.file, where,
           std::string(objective.kind == ObjectiveKind::Cost ? "--objective cost"
                                                             : "--budget") +
               " needs a price, and kind '" + group.kind +
               "' has no on-demand price_per_hour in the device catalog (" +
               group.spec->file + "); give the group a \"price_per_hour\" (USD per device-hour)");
    if (needPower && !group.spec->hasPower())
      fail(cluster.file, where,
           "--objective energy needs the power of every kind, and kind '" + group.kind +
               "', and its catalog entry (" + group.spec->file +
               ") has no \"power\": {\"tdp_w\": ...}");
  }
}

double busySeconds(const LayerTable &table, int b, int e, int microBatches) {
  return microBatches * table.stageCompute(b, e) + table.stageUpdate(b, e);
}

ObjectiveTerms objectiveTerms(const CostModel &cost,
                              const std::vector<CostModel::StageContext> &stages,
                              ObjectiveKind kind) {
  const Cluster &cluster = cost.cluster();
  ObjectiveTerms terms;
  double idle = 0;
  for (const auto &stage : stages)
    for (const auto &member : stage.members) {
      const DeviceGroup &group = cluster.groups[member.group];
      double devices = double(member.replicas) * stage.tp;
      terms.pricePerHour += devices * group.pricePerHour;
      idle += devices * idleWatts(*group.spec);
    }
  switch (kind) {
  case ObjectiveKind::Time:
    terms.alpha = 1;
    break;
  case ObjectiveKind::Cost:
    terms.alpha = terms.pricePerHour / 3600;
    break;
  case ObjectiveKind::Energy:
    // Every device draws idle power for the whole iteration and its busy
    // power while it computes: idle x T + (busy - idle) x busy seconds.
    terms.alpha = idle;
    for (const auto &stage : stages) {
      std::vector<double> weights;
      for (const auto &member : stage.members) {
        const DeviceSpec &spec = *cluster.groups[member.group].spec;
        weights.push_back(double(member.replicas) * stage.tp *
                          (busyWatts(spec) - idleWatts(spec)));
      }
      terms.workWeight.push_back(weights);
    }
    break;
  }
  return terms;
}

namespace {
std::string format(const char *pattern, double a, double b) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}
} // namespace

PlanEconomics assessPlan(const CostModel &cost, const Plan &plan, const Evaluation &evaluation,
                         const Objective &objective) {
  const Cluster &cluster = cost.cluster();
  std::vector<CostModel::StageContext> contexts;
  for (int j = 0; j < int(plan.stages.size()); ++j)
    contexts.push_back(cost.contextOf(plan, j));
  PlanEconomics e;
  e.priced = e.powered = true;
  for (const auto &stage : contexts)
    for (const auto &member : stage.members) {
      const DeviceGroup &group = cluster.groups[member.group];
      e.devices += member.replicas * stage.tp;
      e.priced &= group.pricePerHour > 0;
      e.powered &= group.spec->hasPower();
    }
  const double T = evaluation.iterationTime;
  ObjectiveTerms energy = objectiveTerms(cost, contexts, ObjectiveKind::Energy);
  e.pricePerHour = e.priced ? energy.pricePerHour : 0;
  e.costPerIteration = e.pricePerHour / 3600 * T;
  if (e.powered) {
    e.energyJoules = energy.alpha * T;
    for (size_t j = 0; j < contexts.size(); ++j) {
      std::vector<const LayerTable *> tables = cost.tables(contexts[j]);
      for (size_t k = 0; k < tables.size(); ++k)
        e.energyJoules += energy.workWeight[j][k] *
                          busySeconds(*tables[k], plan.stages[j].layerBegin,
                                      plan.stages[j].layerEnd, plan.microBatches);
    }
    e.averageWatts = T > 0 ? e.energyJoules / T : 0;
  }
  switch (objective.kind) {
  case ObjectiveKind::Time:
    e.objective = T;
    break;
  case ObjectiveKind::Cost:
    e.objective = e.costPerIteration;
    break;
  case ObjectiveKind::Energy:
    e.objective = e.energyJoules;
    break;
  }
  if (!withinDeadline(T, objective))
    e.violated = format("iteration %.4g s is over the deadline of %.4g s", T,
                        objective.deadlineSeconds);
  else if (!withinBudget(energy.pricePerHour, objective))
    e.violated = format("devices cost %.4g USD/h, over the budget of %.4g USD/h",
                        energy.pricePerHour, objective.budgetPerHour);
  return e;
}

} // namespace het::plan
