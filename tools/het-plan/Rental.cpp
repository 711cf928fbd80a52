//===- Rental.cpp - het-plan --inventory ------------------------------------===//
#include "Rental.h"
#include "Report.h"

#include "het/Plan/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace het::plan {
using nlohmann::json;

namespace {
void writeJson(const std::string &path, const json &j) {
  std::ofstream out(path);
  if (!out)
    fail(path, "", std::string("cannot write file: ") + std::strerror(errno));
  out << j.dump(2) << "\n";
}

json choiceToJson(const sim::MixChoice &c) {
  return {{"rent", c.description},
          {"spot", c.spot},
          {"devices", c.economics.devices},
          {"price_usd_per_hour", c.economics.pricePerHour},
          {"iteration_s", c.evaluation.iterationTime},
          {"goodput", c.goodput},
          {"expected_iteration_s", c.expectedSeconds},
          {"expected_cost_usd_per_iteration", c.expectedCost}};
}

std::string line(const sim::MixChoice &c, long globalBatch) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: USD %.2f per hour, iteration %s (%s with failures%s: goodput %.2f%%, "
                "%.0f samples/s), USD %.4g per iteration",
                c.description.c_str(), c.economics.pricePerHour,
                formatSeconds(c.evaluation.iterationTime).c_str(),
                formatSeconds(c.expectedSeconds).c_str(), c.spot ? " and preemptions" : "",
                c.goodput * 100, double(globalBatch) / c.expectedSeconds, c.expectedCost);
  return buf;
}
} // namespace

int printRental(std::ostream &os, const Inventory &inventory, const ModelDesc &model,
                const DeviceCatalog &catalog, const sim::MixOptions &options, bool asJson,
                const std::string &writePlanPath, const std::string &writeClusterPath) {
  sim::MixResult r = sim::recommendMix(inventory, model, catalog, options);
  const long batch = options.planner.globalBatch;
  const double deadline = options.planner.objective.deadlineSeconds;
  if (asJson) {
    json out = {{"model", model.name},
                {"inventory", inventory.name},
                {"global_batch", batch},
                {"deadline_s", deadline},
                {"mixes", r.mixes},
                {"planned", r.planned},
                {"planned_on_demand_only", r.plannedOnDemand},
                {"seconds", r.seconds},
                {"preemptions_per_node_hour", options.failures.preemptionsPerNodeHour},
                {"mtbf_hours", options.failures.mtbfHours},
                {"best", json::array()},
                {"on_demand_only", json::array()}};
    for (const auto &c : r.best)
      out["best"].push_back(choiceToJson(c));
    for (const auto &c : r.onDemandOnly)
      out["on_demand_only"].push_back(choiceToJson(c));
    os << out.dump(2) << "\n";
  } else {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%.0f", double(batch) / deadline);
    os << "het-plan: what to rent from " << inventory.name << " (" << inventory.offers.size()
       << " offers) for " << model.name << ", global batch " << batch << ", iteration at most "
       << formatSeconds(deadline) << " (" << buf << " samples/s)\n";
    os << r.mixes << " mixes of node counts and markets: planned " << r.planned << " ("
       << r.mixes - r.planned << " ruled out by the cost or time bound) and "
       << r.plannedOnDemand << " on demand only in " << formatSeconds(r.seconds)
       << "; failures at an MTBF of " << options.failures.mtbfHours
       << " h per device, spot nodes preempted " << options.failures.preemptionsPerNodeHour
       << " times per node-hour (het-sim's run simulation, " << options.horizonHours
       << " h x " << options.trials << " trials)\n";
    if (r.best.empty())
      os << "no mix meets the deadline\n";
    for (size_t i = 0; i < r.best.size(); ++i)
      os << (i ? "  " : "best: ") << (i ? std::to_string(i + 1) + ". " : "")
         << line(r.best[i], batch) << "\n";
    if (!r.onDemandOnly.empty()) {
      os << "on demand only: " << line(r.onDemandOnly.front(), batch);
      if (!r.best.empty()) {
        std::snprintf(buf, sizeof buf, " (%.2fx the best)",
                      r.onDemandOnly.front().expectedCost / r.best.front().expectedCost);
        os << buf;
      }
      os << "\n";
    }
    if (!r.best.empty()) {
      const sim::MixChoice &b = r.best.front();
      CostModel cost(model, *b.cluster, nullptr, options.setup);
      os << "\nthe best mix's plan: " << b.plan.microBatches << " micro-batches, 1F1B\n";
      printPlan(os, cost, b.plan, b.evaluation);
    }
  }
  if (r.best.empty())
    return 3;
  const sim::MixChoice &b = r.best.front();
  if (!writePlanPath.empty()) {
    json pj = planToJson(b.plan, *b.cluster, model);
    writeJson(writePlanPath, pj);
  }
  if (!writeClusterPath.empty()) {
    json spec = b.clusterSpec;
    spec["name"] = inventory.name + "-rented";
    spec["description"] = "What het-plan --inventory chose to rent from " + inventory.file +
                          " for " + model.name + ": " + b.description;
    writeJson(writeClusterPath, spec);
  }
  return 0;
}

} // namespace het::plan
