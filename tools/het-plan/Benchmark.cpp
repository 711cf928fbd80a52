//===- Benchmark.cpp - how planning time scales ---------------------------===//
#include "Benchmark.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/Planner.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>

namespace het::plan {

// The six kinds of examples/clusters/six-vendor-1024.json.
static const char *kKinds[] = {"A100-80", "MI300X", "Ascend-910B",
                               "BI-V150", "C500",   "MTT-S4000"};

// `devices` accelerators, 8 per node, split evenly over `kinds` kinds, one
// 400 Gb/s network.
static Cluster syntheticCluster(const DeviceCatalog &catalog, int devices,
                                int kinds, int perNode = 8) {
  nlohmann::json nodes = nlohmann::json::array();
  int nodesPerKind = std::max(1, devices / perNode / kinds);
  for (int k = 0; k < kinds; ++k) {
    std::string group = "g" + std::to_string(k);
    nodes.push_back(
        {{"name", group + "-node"},
         {"count", nodesPerKind},
         {"devices",
          {{{"group", group}, {"kind", kKinds[k]}, {"count", perNode}}}}});
  }
  nlohmann::json spec = {
      {"name", "synthetic"},
      {"nodes", nodes},
      {"network",
       {{"type", "roce"}, {"bandwidth_gbps", 400.0}, {"latency_us", 5.0}}}};
  return parseCluster(spec, "(benchmark)", catalog);
}

static double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

void runBenchmark(std::ostream &os, const DeviceCatalog &catalog) {
  char line[256];
  os << "planning time (GPT-3-shaped blocks: hidden 12288, 96 heads, sequence "
        "2048; global batch 1536; 8 devices per node)\n";
  std::snprintf(line, sizeof line, "%7s %8s %6s %14s %9s %10s %12s %14s\n",
                "layers", "devices", "kinds", "shapes", "exact", "evaluated",
                "plan time", "iteration");
  os << line;
  for (int blocks : {22, 46, 94})
    for (int devices : {64, 256, 1024})
      for (int kinds : {1, 2, 4, 6}) {
        if (devices / 8 < kinds)
          continue;
        Cluster cluster = syntheticCluster(catalog, devices, kinds);
        ModelDesc model =
            makeGptModel("gpt", blocks, 12288, 96, 2048, 50257, "bf16");
        CostModel cost(model, cluster, nullptr);
        PlannerOptions options;
        options.globalBatch = 1536;
        auto t0 = std::chrono::steady_clock::now();
        PlanResult r = planPipeline(cost, options);
        double t = seconds(t0);
        char iteration[32] = "no fit";
        if (!r.plans.empty())
          std::snprintf(iteration, sizeof iteration, "%.2f s",
                        r.plans[0].evaluation.iterationTime);
        std::snprintf(
            line, sizeof line, "%7zu %8d %6d %14.3g %9s %10ld %10.3f s %14s\n",
            model.layers.size(), cluster.deviceCount(), kinds, r.shapes,
            r.exact ? "yes" : "no", r.shapesEvaluated, t, iteration);
        os << line;
      }

  os << "\nplanner against brute force (same space, every layer split "
        "enumerated; 2 devices per node)\n";
  std::snprintf(line, sizeof line, "%7s %6s %8s %12s %12s %9s %7s\n", "layers",
                "kinds", "devices", "planner", "brute force", "ratio", "agree");
  os << line;
  for (int layers : {6, 8, 10})
    for (int kinds : {2, 3}) {
      Cluster cluster = syntheticCluster(catalog, 4 * kinds, kinds, 2);
      ModelDesc model = makeGptModel("gpt", layers - 2, 2048, 16, 1024, 50257);
      CostModel cost(model, cluster, nullptr);
      PlannerOptions options;
      options.globalBatch = 16;
      options.topK = 1;
      auto t0 = std::chrono::steady_clock::now();
      PlanResult fast = planPipeline(cost, options);
      double tf = seconds(t0);
      t0 = std::chrono::steady_clock::now();
      PlanResult slow = bruteForcePlan(cost, options);
      double ts = seconds(t0);
      double a = fast.plans.empty() ? INFINITY
                                    : fast.plans[0].evaluation.iterationTime;
      double b = slow.plans.empty() ? INFINITY
                                    : slow.plans[0].evaluation.iterationTime;
      bool agree = (std::isinf(a) && std::isinf(b)) ||
                   std::fabs(a - b) <= 1e-9 * std::max(a, b);
      std::snprintf(line, sizeof line,
                    "%7d %6d %8d %10.4f s %10.4f s %8.1fx %7s\n", layers, kinds,
                    cluster.deviceCount(), tf, ts, ts / tf,
                    agree ? "yes" : "NO");
      os << line;
    }
}

} // namespace het::plan
