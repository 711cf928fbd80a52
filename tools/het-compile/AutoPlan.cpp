//===- AutoPlan.cpp - --plan auto: calibrate local device kinds, then plan -===//

#include "AutoPlan.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/ModelFromIR.h"
#include "het/Plan/Plan.h"
#include "het/Plan/Planner.h"

#include <nlohmann/json.hpp>

#include "llvm/Support/FormatVariadic.h"

#include <deque>
#include <fstream>
#include <map>

using namespace het::plan;

namespace het::compile {

namespace {

/// The kernel library a local CPU device kind compiles with; empty: not a
/// kind this machine runs.
std::string libraryOf(const DeviceSpec &spec) {
  if (spec.vendor != "cpu")
    return "";
  if (spec.arch == "mlir")
    return "mlir";
  if (spec.arch == "reference")
    return "reference";
  return "dnnl";
}

} // namespace

llvm::Expected<AutoPlanResult> planForCluster(mlir::ModuleOp module, mlir::func::FuncOp step,
                                              const AutoPlanRequest &request) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  try {
    DeviceCatalog catalog = DeviceCatalog::loadDirectory(DeviceCatalog::defaultDirectory());
    Cluster cluster = loadCluster(request.clusterFile, catalog);
    ModelDesc model = modelFromModule(module, "(input IR)", step.getName().str());
    if (model.batch <= 0)
      return error("--plan auto needs a model with a batch dimension");
    double flopsPerStep = 0;
    for (const LayerDesc &layer : model.layers)
      flopsPerStep += (layer.fwdFlops + layer.bwdFlops) * double(model.batch);

    AutoPlanResult result;
    llvm::raw_string_ostream report(result.report);
    // Calibrate every local kind once; the copies outlive the planning.
    std::deque<DeviceSpec> calibrated;
    std::map<std::string, const DeviceSpec *> byKind;
    for (DeviceGroup &group : cluster.groups) {
      std::string library = libraryOf(*group.spec);
      if (library.empty())
        continue;
      auto found = byKind.find(group.spec->name);
      if (found == byKind.end()) {
        llvm::Expected<double> seconds = request.measureStep(library);
        if (!seconds)
          return seconds.takeError();
        DeviceSpec spec = *group.spec;
        // The achieved rate already includes memory traffic and call
        // overheads: the roofline's memory side must not count them twice.
        spec.peakTflops = {{model.dtype, flopsPerStep / *seconds / 1e12}};
        spec.computeEfficiency = 1.0;
        spec.memoryBandwidthGBs = 1e9;
        spec.memoryEfficiency = 1.0;
        calibrated.push_back(spec);
        found = byKind.emplace(spec.name, &calibrated.back()).first;
        report << llvm::formatv("measured {0} ({1} kernels): {2:f3} ms per step of batch {3}, "
                                "{4:f2} GFLOP/s\n",
                                spec.name, library, 1e3 * *seconds, model.batch,
                                flopsPerStep / *seconds / 1e9);
      }
      group.spec = found->second;
    }

    // One stage per group, all groups, the model's batch per micro-batch:
    // what the pipeline runtime executes.
    int replicas = cluster.groups.front().count();
    for (const DeviceGroup &group : cluster.groups)
      replicas = std::min(replicas, group.count());
    CostModel cost(model, cluster, nullptr);
    PlannerOptions options;
    options.globalBatch = model.batch * long(replicas) * request.microBatches;
    options.topK = 64;
    options.tensorParallel = {1};
    options.maxStagesPerGroup = 1;
    options.maxMicroBatches = request.microBatches;
    options.allowSubsets = false;
    PlanResult planned = planPipeline(cost, options);
    const RankedPlan *chosen = nullptr;
    for (const RankedPlan &candidate : planned.plans) {
      bool usable = candidate.plan.microBatches == request.microBatches;
      for (const StagePlan &stage : candidate.plan.stages)
        usable &= !stage.mixed() && stage.replicas() == replicas && stage.tensorParallel == 1;
      if (usable) {
        chosen = &candidate;
        break;
      }
    }
    if (!chosen)
      return error(llvm::formatv(
          "the planner found no plan with one stage per device group, {0} replicas each and "
          "{1} micro-batches of {2} for {3}; write a plan (het-plan --write-plan) and pass "
          "--plan",
          replicas, request.microBatches, model.batch, request.clusterFile));
    for (const StagePlan &stage : chosen->plan.stages)
      report << llvm::formatv("stage on {0} x{1}: layers [{2}, {3})\n",
                              cluster.groups[stage.group()].name, stage.replicas(),
                              stage.layerBegin, stage.layerEnd);
    result.predictedSeconds = chosen->evaluation.iterationTime;
    report << llvm::formatv("predicted iteration time {0:f3} ms ({1} micro-batches of {2})\n",
                            1e3 * result.predictedSeconds, request.microBatches, model.batch);
    std::ofstream out(request.planOut);
    out << planToJson(chosen->plan, cluster, model).dump(2) << "\n";
    if (!out)
      return error("cannot write the plan to " + request.planOut);
    return result;
  } catch (const PlanError &e) {
    return error(e.what());
  } catch (const std::exception &e) {
    return error(llvm::Twine("malformed cluster or plan input: ") + e.what());
  }
}

} // namespace het::compile
