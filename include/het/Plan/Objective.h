//===- Objective.h - what a plan is optimised for: time, cost or energy -*- C++ -*-===//
//
// The planner minimises one of three figures per iteration: its time, what
// the devices it rents cost while it runs, or the energy they draw. A plan
// rents exactly the devices its stages use (r replicas x tp devices each);
// groups it leaves out cost nothing. Each figure has the form
//
//   value = alpha * iterationTime + sum over stage members of
//           workWeight * busySeconds
//
// with alpha and the weights fixed by the devices a shape uses (time:
// alpha 1; cost: the devices' price per second; energy: their idle power,
// and per member the busy-minus-idle power of its devices), so the split
// solver's dynamic program optimises any of them exactly.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_OBJECTIVE_H
#define HET_PLAN_OBJECTIVE_H

#include "het/Plan/CostModel.h"

#include <string>
#include <vector>

namespace het::plan {

enum class ObjectiveKind {
  Time,   // seconds per iteration
  Cost,   // USD per iteration: price per hour of the devices used x time
  Energy, // joules per iteration: devices at busy power while computing,
          // at idle power otherwise
};
const char *toString(ObjectiveKind kind);
bool parseObjectiveKind(const std::string &text, ObjectiveKind &out);
/// The unit of an objective's value ("s", "USD", "J").
const char *unitOf(ObjectiveKind kind);

struct Objective {
  ObjectiveKind kind = ObjectiveKind::Time;
  /// > 0: only plans whose iteration takes at most this many seconds.
  double deadlineSeconds = 0;
  /// > 0: only plans whose devices cost at most this many USD per hour.
  double budgetPerHour = 0;
  bool constrained() const { return deadlineSeconds > 0 || budgetPerHour > 0; }
};

/// Whether an iteration of `seconds`, or devices at `pricePerHour`, keep
/// within the objective's deadline and budget (a relative 1e-12 of slack:
/// the planner's sums and an evaluation's add the same terms in another
/// order).
bool withinDeadline(double seconds, const Objective &objective);
bool withinBudget(double pricePerHour, const Objective &objective);

/// Busy and idle power of one device of a kind (catalog `power`): busy is
/// the TDP; idle the published `idle_w`, else kDefaultIdleFraction of TDP
/// (the report says which kinds were assumed).
constexpr double kDefaultIdleFraction = 0.15;
double busyWatts(const DeviceSpec &spec);
double idleWatts(const DeviceSpec &spec);
bool idleAssumed(const DeviceSpec &spec);

/// Throws PlanError, naming the group, its kind and the missing field,
/// when the objective or its constraints need a figure a group lacks: a
/// price (cost, budget) or a TDP (energy).
void checkObjectiveInputs(const Cluster &cluster, const Objective &objective);

/// alpha and the per-member weights of the objective for the stages of a
/// shape (CostModel::StageContext members, in order).
struct ObjectiveTerms {
  double alpha = 1;
  std::vector<std::vector<double>> workWeight; // [stage][member]; empty: none
  double pricePerHour = 0;                     // of the devices the stages use
  bool hasWork() const { return !workWeight.empty(); }
};
ObjectiveTerms objectiveTerms(const CostModel &cost,
                              const std::vector<CostModel::StageContext> &stages,
                              ObjectiveKind kind);

/// Seconds a member of a stage computes per iteration over layers [b, e):
/// micro-batches x (forward + backward) + its optimizer step.
double busySeconds(const LayerTable &table, int b, int e, int microBatches);

/// A plan's price, energy and objective value.
struct PlanEconomics {
  int devices = 0;             // devices the plan rents
  double pricePerHour = 0;     // USD for those devices; 0 if unpriced
  double costPerIteration = 0; // USD
  double energyJoules = 0;     // per iteration; 0 if a kind has no TDP
  double averageWatts = 0;
  double objective = 0;        // in unitOf(kind)
  bool priced = false, powered = false;
  /// Empty when the plan meets the deadline and the budget; else which.
  std::string violated;
};
PlanEconomics assessPlan(const CostModel &cost, const Plan &plan, const Evaluation &evaluation,
                         const Objective &objective);

} // namespace het::plan

#endif
