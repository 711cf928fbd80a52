//===- AutoPlan.cpp - --plan auto: calibrate local device kinds, then plan -===//

#include "AutoPlan.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/Explain.h"
#include "het/Plan/MeasuredPlans.h"
#include "het/Plan/ExpertPlacement.h"
#include "het/Plan/MemorySavers.h"
#include "het/Plan/ModelFromIR.h"
#include "het/Plan/Plan.h"
#include "het/Plan/Planner.h"
#include "het/Tune/StageProfiles.h"
#include "het/Tune/TuningDatabase.h"

#include <nlohmann/json.hpp>

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <deque>
#include <fstream>
#include <map>

using namespace het::plan;

namespace het::compile {


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

    // The format the calibrated steps are in (layers of several formats:
    // priced as fp32 kinds, and the plan states none).
    const std::string format = request.format.empty() ? "fp32" : request.format;
    AutoPlanResult result;
    llvm::raw_string_ostream report(result.report);
    // Measured stage profiles and messages, where the database has them.
    ProfileSet profiles;
    MeasuredCommunication communication;
    bool communicationFound = false;
    if (!request.tuningDb.empty()) {
      try {
        for (const std::string &line :
             het::tune::readPlannerRecords(request.tuningDb, model, cluster, profiles,
                                           communication, communicationFound))
          report << "tuning database: " << line << "\n";
      } catch (const het::tune::DatabaseError &e) {
        report << "het-compile: warning: " << e.what() << "; --plan auto calibrates instead\n";
        profiles = ProfileSet();
        communicationFound = false;
      }
    }
    std::vector<LayerTime> ignored;
    // Calibrate every local kind once; the copies outlive the planning.
    std::deque<DeviceSpec> calibrated;
    std::map<std::string, const DeviceSpec *> byKind;
    for (DeviceGroup &group : cluster.groups) {
      std::string library = group.spec->localLibrary();
      if (library.empty())
        continue;
      if (profiles.lookup(group.spec->name, 1, model.batch, ignored))
        continue; // its measured layers price it
      auto found = byKind.find(group.spec->name);
      if (found == byKind.end()) {
        llvm::Expected<StepTime> time = request.measureStep(library);
        if (!time)
          return time.takeError();
        const double *seconds = &time->seconds;
        DeviceSpec spec = *group.spec;
        // The achieved rate already includes memory traffic and call
        // overheads: the roofline's memory side must not count them twice.
        // The step's format is the one measured; the kind's other formats
        // stay listed (plans name what a kind can run) at the catalog's
        // figures, which this plan does not use.
        spec.peakTflops[format] = flopsPerStep / *seconds / 1e12;
        spec.computeEfficiency = 1.0;
        spec.memoryBandwidthGBs = 1e9;
        spec.memoryEfficiency = 1.0;
        calibrated.push_back(spec);
        found = byKind.emplace(spec.name, &calibrated.back()).first;
        report << llvm::formatv("{0}{1} ({2} kernels): {3:f3} ms per step of batch {4}, "
                                "{5:f2} GFLOP/s{6}\n",
                                time->source.empty() ? "measured " : "", spec.name, library,
                                1e3 * *seconds, model.batch, flopsPerStep / *seconds / 1e9,
                                time->source.empty() ? "" : ", " + time->source);
      }
      group.spec = found->second;
    }

    // The whole plan space, with the measured speeds.
    int smallest = cluster.groups.front().count();
    for (const DeviceGroup &group : cluster.groups)
      smallest = std::min(smallest, group.count());
    Precision precision = Precision::FP32;
    if (!parsePrecision(format, precision))
      return error("--plan auto: no planner precision for the format " + format);
    CostModel cost(model, cluster, profiles.empty() ? nullptr : &profiles,
                   TrainingSetup::of(model, precision));
    if (communicationFound)
      cost.setMeasuredCommunication(&communication);
    PlannerOptions options;
    options.globalBatch =
        request.globalBatch > 0
            ? request.globalBatch
            : model.batch * long(std::max(1, request.microBatches)) * long(smallest);
    options.exactMicroBatches = request.microBatches;
    options.topK = 1;
    // Plans of this model that ran on this cluster and host (het-run
    // --tuning-db): then the planner lists several candidates, and what
    // they measured ranks them.
    std::map<std::string, double> measured;
    if (!request.tuningDb.empty() && !request.modelKey.empty()) {
      try {
        auto db = het::tune::TuningDatabase::open(request.tuningDb,
                                                  het::tune::TuningDatabase::Mode::ReadOnly);
        for (const het::tune::Record &r :
             db->find("plan", measuredPlanPrefix(request.modelKey), "job",
                      het::tune::hostIdentity(), het::tune::hetVersion()))
          measured[r.workload] = r.seconds;
      } catch (const het::tune::DatabaseError &) {
        // (Its stage profiles were read above, or warned about.)
      }
      if (!measured.empty())
        options.topK = 8;
    }
    PlanResult planned = planPipeline(cost, options);
    // Nothing fits in memory as it is: shard state over replicas and
    // recompute activations, whichever combination plans fastest.
    if (planned.plans.empty() && planned.constraintMisses == 0) {
      SaverChoice savers = chooseMemorySavers(cost, options, /*mayRecompute=*/true,
                                              /*mayShard=*/true);
      if (!savers.result.plans.empty()) {
        planned = std::move(savers.result);
        report << llvm::formatv("no plan fits in device memory as it is: {0}{1}{2}\n",
                                savers.zero > 0 ? "up to ZeRO-" + std::to_string(savers.zero) +
                                                      " in the stages of several replicas "
                                                      "that need it"
                                                : std::string(),
                                savers.zero > 0 && savers.recompute != Recompute::None
                                    ? ", "
                                    : "",
                                savers.recompute != Recompute::None
                                    ? std::string("up to ") + toString(savers.recompute) +
                                          " activation recomputation in the stages that "
                                          "need it"
                                    : std::string());
      }
    }
    // Experts spread over replicas where that plans better (ExpertPlacement.h).
    if (int stages = placeExperts(cost, options, planned.plans); stages > 0)
      report << "expert parallelism: in " << stages
             << " stage(s) of the planned plans, where it plans better\n";
    if (planned.plans.empty())
      return error(llvm::formatv("the planner found no plan for {0} at a global batch of {1}{2}",
                                 request.clusterFile, options.globalBatch,
                                 request.microBatches > 0
                                     ? " in " + std::to_string(request.microBatches) +
                                           " micro-batches"
                                     : std::string()));
    const RankedPlan *chosen = &planned.plans.front();
    // The plan as its file says it, which its key digests.
    auto asWritten = [&](const Plan &p) {
      Plan written = p;
      if (request.format.empty())
        written.formats.clear(); // layers of several formats: --layer-precisions says
      return planToJson(written, cluster, model);
    };
    if (!measured.empty()) {
      std::vector<RankedCandidate> candidates;
      for (const RankedPlan &r : planned.plans) {
        RankedCandidate c;
        c.predictedSeconds = r.evaluation.iterationTime;
        auto it = measured.find(
            measuredPlanWorkload(measuredPlanKey(request.modelKey, asWritten(r.plan))));
        if (it != measured.end())
          c.measuredSeconds = it->second;
        candidates.push_back(c);
      }
      double ratio = rankByMeasurement(candidates);
      size_t best = 0;
      for (size_t k = 0; k < candidates.size(); ++k) {
        if (candidates[k].measuredSeconds)
          report << llvm::formatv("candidate {0}: measured {1:f3} ms before (het-run "
                                  "--tuning-db), predicted {2:f3} ms\n",
                                  k + 1, 1e3 * *candidates[k].measuredSeconds,
                                  1e3 * candidates[k].predictedSeconds);
        if (candidates[k].expectedSeconds < candidates[best].expectedSeconds)
          best = k;
      }
      report << llvm::formatv("ranked {0} candidates by what they measured, the others by "
                              "their prediction x {1:f2} (the measured plans' median "
                              "measured/predicted): candidate {2}, {3} {4:f3} ms\n",
                              candidates.size(), ratio, best + 1,
                              candidates[best].measuredSeconds ? "measured" : "expected",
                              1e3 * candidates[best].expectedSeconds);
      chosen = &planned.plans[best];
    }
    for (size_t j = 0; j < chosen->plan.stages.size(); ++j) {
      const StagePlan &stage = chosen->plan.stages[j];
      std::string replicas;
      CostModel::StageContext ctx = cost.contextOf(chosen->plan, int(j));
      for (size_t k = 0; k < stage.replicaGroups.size(); ++k)
        replicas += llvm::formatv("{0}{1} x{2} ({3} sample{4} each)", k ? " + " : "",
                                  cluster.groups[stage.replicaGroups[k].group].name,
                                  stage.replicaGroups[k].replicas, ctx.members[k].mbs,
                                  ctx.members[k].mbs == 1 ? "" : "s");
      report << llvm::formatv("stage s{0}: layers [{1}, {2}) on {3}{4}{5}{6}\n", j,
                              stage.layerBegin, stage.layerEnd, replicas,
                              stage.tensorParallel > 1
                                  ? ", tensor parallel " + std::to_string(stage.tensorParallel)
                                  : std::string(),
                              ctx.zero > 0 ? ", ZeRO-" + std::to_string(ctx.zero) : std::string(),
                              stage.recompute != Recompute::None
                                  ? std::string(", recompute ") + toString(stage.recompute)
                                  : std::string());
    }
    result.predictedSeconds = chosen->evaluation.iterationTime;
    report << llvm::formatv("predicted iteration time {0:f3} ms (global batch {1} in {2} "
                            "micro-batch{3})\n",
                            1e3 * result.predictedSeconds, chosen->plan.globalBatch,
                            chosen->plan.microBatches, chosen->plan.microBatches == 1 ? "" : "es");
    // Where it goes (het-plan --explain has the long form).
    std::string where = summarizeBreakdown(explainIteration(chosen->plan, chosen->evaluation));
    if (!where.empty())
      report << "where it goes: " << where << "\n";
    // The calibrated kinds, for het-plan --devices.
    if (!request.devicesOut.empty()) {
      nlohmann::json devices = nlohmann::json::array();
      for (const DeviceSpec &spec : calibrated)
        devices.push_back(
            {{"name", spec.name},
             {"vendor", spec.vendor},
             {"arch", spec.arch},
             // Only what was measured: the step in its format.
             {"peak_tflops", {{format, spec.peakTflops.at(format)}}},
             {"memory_gib", spec.memoryGib},
             {"memory_bandwidth_gbs", spec.memoryBandwidthGBs},
             {"intra_node_link",
              {{"type", spec.intraNodeLinkType}, {"bandwidth_gbs", spec.intraNodeLinkGBs}}},
             {"efficiency", {{"compute", 1.0}, {"memory", 1.0}}},
             {"source", "measured by het-compile --plan auto on " + model.name +
                            " (a step on one thread)"}});
      std::ofstream out(request.devicesOut);
      out << nlohmann::json{{"devices", devices}}.dump(2) << "\n";
      if (!out)
        return error("cannot write the calibrated devices to " + request.devicesOut);
    }
    std::ofstream out(request.planOut);
    nlohmann::json plan = asWritten(chosen->plan);
    plan["predicted_iteration_s"] = result.predictedSeconds;
    out << plan.dump(2) << "\n";
    if (!out)
      return error("cannot write the plan to " + request.planOut);
    return result;
  } catch (const PlanError &e) {
    return error(e.what());
  } catch (const std::exception &e) {
    return error(llvm::Twine("malformed cluster or plan input: ") + e.what());
  }
}

llvm::Expected<double> predictPlanFile(mlir::ModuleOp module, mlir::func::FuncOp step,
                                       const std::string &clusterFile,
                                       const std::string &planFile, const std::string &tuningDb,
                                       std::string &reportText) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  llvm::raw_string_ostream report(reportText);
  try {
    DeviceCatalog catalog = DeviceCatalog::loadDirectory(DeviceCatalog::defaultDirectory());
    Cluster cluster = loadCluster(clusterFile, catalog);
    ModelDesc model = modelFromModule(module, "(input IR)", step.getName().str());
    ProfileSet profiles;
    MeasuredCommunication communication;
    bool communicationFound = false;
    try {
      for (const std::string &line : het::tune::readPlannerRecords(
               tuningDb, model, cluster, profiles, communication, communicationFound))
        report << "tuning database: " << line << "\n";
    } catch (const het::tune::DatabaseError &e) {
      report << "het-compile: warning: " << e.what() << "; the plan's own prediction stands\n";
      return 0.0;
    }
    if (profiles.empty())
      return 0.0;
    std::ifstream in(planFile);
    nlohmann::json doc = nlohmann::json::parse(in);
    Plan plan = planFromJson(doc, planFile, cluster, model);
    CostModel cost(model, cluster, &profiles);
    cost.trainIn(plan.formats, planFile);
    if (communicationFound)
      cost.setMeasuredCommunication(&communication);
    Evaluation ev = cost.evaluate(plan);
    if (!std::isfinite(ev.iterationTime))
      return error(planFile + ": " + ev.problem);
    report << llvm::formatv("predicted iteration time {0:f3} ms with the measurements "
                            "(pipeline {1:f3} ms + gradient sync and optimizer {2:f3} ms{3})\n",
                            1e3 * ev.iterationTime, 1e3 * ev.pipelineTime, 1e3 * ev.syncTime,
                            ev.sharedCoresTime > 0
                                ? llvm::formatv("; simulated on this host's {0} cores, "
                                                "which the ranks outnumber",
                                                communication.cores)
                                      .str()
                                : std::string());
    return ev.iterationTime;
  } catch (const PlanError &e) {
    return error(e.what());
  } catch (const std::exception &e) {
    return error(llvm::Twine("malformed cluster or plan input: ") + e.what());
  }
}

std::string measuredPlanKeyOfFile(const std::string &modelKey, const std::string &planFile) {
  std::ifstream in(planFile);
  nlohmann::json plan = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (modelKey.empty() || plan.is_discarded())
    return "";
  return measuredPlanKey(modelKey, plan);
}

} // namespace het::compile
