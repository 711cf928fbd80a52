//===- het-plan.cpp - plan mixed-chip training: which chips run which layers =//
//
// Reads a cluster spec and a model (het IR or a model JSON), searches for
// the fastest (or cheapest, or least energy) 1F1B pipeline plan that fits
// in memory, and prints it beside a uniform (Megatron-style) split of the
// same cluster and the best plan on each single-vendor subset. --evaluate
// scores a given plan instead.
//
//===----------------------------------------------------------------------===//
#include "Benchmark.h"
#include "Rental.h"
#include "Report.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/GanttSvg.h"
#include "het/Plan/ExpertPlacement.h"
#include "het/Plan/MemorySavers.h"
#include "het/Plan/ModelFromIR.h"
#include "het/Plan/Planner.h"
#include "het/Tune/StageProfiles.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <cstring>
#include <cerrno>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <map>

using namespace het::plan;
using nlohmann::json;

namespace {

enum ExitCode { Ok = 0, InputError = 1, UsageError = 2, NothingFits = 3 };

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  if (!out)
    fail(path, "", std::string("cannot write file: ") + std::strerror(errno));
  out << text;
}

json evaluationToJson(const Evaluation &ev) {
  json stages = json::array();
  for (const auto &s : ev.stages) {
    const StageMemory &m = s.memory;
    stages.push_back({{"fwd_s", s.fwd},
                      {"bwd_s", s.bwd},
                      {"p2p_s", s.p2p},
                      {"sync_s", s.sync},
                      {"update_s", s.update},
                      {"memory_bytes", s.memoryBytes()},
                      {"capacity_bytes", s.capacityBytes},
                      // By use, as the runtime's --profile-memory splits its peak.
                      {"memory",
                       {{"parameters", m.parameters},
                        {"gradients", m.gradients},
                        {"optimizer_state", m.optimizerState},
                        {"activations", m.activations},
                        {"batch_data", m.batchData},
                        {"gradient_results", m.gradientResults},
                        {"working_set", m.workingSet},
                        {"update_working_set", m.updateWorkingSet},
                        {"peak_phase", m.update() > m.backward() ? "update" : "backward"}}}});
  }
  return {{"iteration_s", ev.iterationTime},
          {"pipeline_s", ev.pipelineTime},
          {"sync_s", ev.syncTime},
          {"bottleneck_stage", ev.bottleneck},
          {"fits", ev.fits},
          {"worst_shortfall_bytes", ev.worstShortfallBytes},
          {"stages", stages}};
}

struct Baseline {
  std::string label;
  PlanResult result;
};

} // namespace

/// 17226 -> "17.2 K", 1.75e11 -> "175 B": parameter counts span 10 orders.
static std::string humanCount(double count) {
  const char *units[] = {"", " K", " M", " B", " T"};
  int unit = 0;
  while (count >= 1000 && unit < 4) {
    count /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, count < 10 && unit ? "%.2f%s" : "%.3g%s", count, units[unit]);
  return text;
}

/// CLI11's PositiveNumber accepts 0.5 and says "not in range 0 to
/// 1.8e308" for 0; the counts here are integers.
CLI::Validator positiveInteger() {
  return CLI::Validator(
      [](std::string &text) -> std::string {
        char *end = nullptr;
        long value = std::strtol(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || value < 1)
          return "expects a positive integer, got '" + text + "'";
        return "";
      },
      "POSITIVE");
}

/// het-run's output for --measured: the whole file, or an error naming it.
static std::string readMeasuredLog(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    fail(path, "", "cannot read it (--measured: what het-run printed for this plan)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int main(int argc, char **argv) {
  CLI::App app{"het-plan: choose which chips run which layers (pipeline "
               "stages, data and tensor parallelism, micro-batching, "
               "all-reduce algorithms) for one training job on a mixed "
               "cluster, by a cost model and an exact search"};
  std::string tuningDbPath;
  std::string measuredPath;
  std::string clusterPath, modelPath, profilesDir, catalogDir, svgPath,
      evaluatePath, writePlanPath, writePlansDir, devicesPath;
  long globalBatch = 0;
  int top = 3, maxMicro = 0, maxStages = 0;
  bool asJson = false, benchmark = false, noSubsets = false, showModel = false, explain = false,
       noMixed = false, equalReplicas = false;
  double exhaustiveLimit = 2e5;
  std::string precisionName = "auto", objectiveName = "time", recomputeName = "auto",
              zeroName = "auto", expertsName = "auto";
  double deadline = 0, budget = 0, maxSlowdown = 0.01, throughput = 0;
  std::string inventoryPath, writeClusterPath;
  het::sim::FailureAssumptions failureAssumptions;
  bool frequencyScaling = false;
  std::vector<int> tp = {1, 2, 4, 8};
  app.add_option("--cluster", clusterPath,
                 "cluster spec (JSON, see examples/clusters/README.md)");
  app.add_option("--model", modelPath,
                 "model: het IR (.mlir, ops tagged with het.layer) or a model "
                 "JSON ({\"gpt\": {...}} or {\"layers\": [...]})");
  app.add_option("--tuning-db", tuningDbPath,
                 "tuning database (het-tune): this host's measured stage profiles (het-tune "
                 "stages) replace the roofline for their device kinds, and its measured "
                 "all-reduces (het-tune collectives) price communication inside the node");
  app.add_option("--profiles", profilesDir,
                 "directory of measured per-layer profiles (Sailor, Metis or "
                 "het format); they replace the roofline for their devices");
  app.add_option("--catalog", catalogDir,
                 "device catalog directory (default: $HET_DEVICE_CATALOG or "
                 "the shipped data/devices)");
  app.add_option("--devices", devicesPath,
                 "device specs (catalog format) that replace the catalog's entries of "
                 "the same name, e.g. the local kinds het-compile --plan auto "
                 "calibrated on a model (<output>.devices.json)");
  app.add_option("--global-batch", globalBatch,
                 "samples per iteration (default: the IR's batch, or 512 for a "
                 "model JSON)")
      ->check(positiveInteger());
  app.add_option("--top", top, "how many plans to print (best first)")
      ->check(positiveInteger());
  app.add_flag("--json", asJson, "print JSON instead of tables");
  app.add_option("--svg", svgPath,
                 "write the best plan's iteration as a Gantt chart (SVG)");
  app.add_option("--write-plan", writePlanPath,
                 "write the best plan as a plan JSON (input of --evaluate and "
                 "het-opt --het-partition)");
  app.add_option("--write-plans", writePlansDir,
                 "write every plan listed (--top) as DIR/plan-<k>.json, best first");
  app.add_option("--evaluate", evaluatePath,
                 "score this plan JSON instead of searching: iteration time, "
                 "per-stage times, memory per device, bottleneck");
  app.add_option("--precision", precisionName,
                 "number format each device kind trains in (docs/precision.md): mixed (bf16 "
                 "where the kind has it, else fp16 with loss scaling, else fp32; fp32 master "
                 "weights, gradients and Adam moments), bf16 or fp16 (every kind; one that "
                 "lacks it is an error naming it), fp32, or auto (fp32 for an fp32 model, "
                 "else mixed). Gradients are reduced in fp32 in every case")
      ->check(CLI::IsMember({"auto", "fp32", "mixed", "bf16", "fp16"}));
  app.add_option("--recompute", recomputeName,
                 "activation recomputation (docs/memory.md) of every stage: none, selective "
                 "(keep the matrix products' results, recompute the cheap rest; IR models), "
                 "full (keep each layer's input, run its forward again before its backward), "
                 "or auto (default: none, unless no plan fits in device memory without it; "
                 "then the fastest mode that fits, and the plan file says so per stage for "
                 "het-compile --plan)")
      ->check(CLI::IsMember({"auto", "none", "selective", "full"}));
  app.add_option("--expert-parallel", expertsName,
                 "spread the experts of mixture-of-experts layers over a stage's replicas "
                 "(docs/moe.md): auto (default: in each stage of several replicas where some "
                 "number of experts per kind makes the plan better by the objective) or off")
      ->check(CLI::IsMember({"auto", "off"}));
  app.add_option("--zero", zeroName,
                 "sharded data parallelism (docs/memory.md) of every stage of several "
                 "replicas: 0, 1 (optimizer state in blocks by batch share), 2 (and "
                 "gradients), 3 (and parameters), or auto (default: 0, unless no plan fits in "
                 "device memory without sharding or recomputation; then the fastest fitting "
                 "combination of a level and --recompute auto's choice, said per stage in the "
                 "plan file for het-compile --plan)")
      ->check(CLI::IsMember({"auto", "0", "1", "2", "3"}));
  app.add_option("--objective", objectiveName,
                 "what the best plan minimises per iteration: time, cost (USD: the price per "
                 "hour of the devices the plan uses, from the catalog or the cluster spec's "
                 "price_per_hour and market) or energy (J: busy power while computing, idle "
                 "power otherwise)")
      ->check(CLI::IsMember({"time", "cost", "energy"}));
  app.add_option("--deadline", deadline,
                 "only plans whose iteration takes at most this many seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--budget", budget,
                 "only plans whose devices cost at most this many USD per hour")
      ->check(CLI::PositiveNumber);
  app.add_option("--throughput", throughput,
                 "samples per second the job must reach: a deadline of global batch / "
                 "throughput per iteration")
      ->check(CLI::PositiveNumber);
  app.add_option("--inventory", inventoryPath,
                 "instead of --cluster: what can be rented (a cluster spec whose node counts are "
                 "the most available, with \"markets\" per device entry); recommends the "
                 "least-cost mix of node counts and markets that meets --deadline or "
                 "--throughput, spot capacity charged its preemptions as het-sim simulates them")
      ->excludes("--evaluate");
  app.add_option("--write-cluster", writeClusterPath,
                 "with --inventory: write the cluster spec of what to rent");
  app.add_option("--preemptions-per-node-hour", failureAssumptions.preemptionsPerNodeHour,
                 "with --inventory: how often a spot node is taken back (as het-sim)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mtbf-hours", failureAssumptions.mtbfHours,
                 "with --inventory: mean time between failures of one device (as het-sim)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--frequency-scaling", frequencyScaling,
               "after planning, lower the clocks of stages that wait for the bottleneck and "
               "report the energy saved (on with --objective energy)");
  app.add_option("--max-slowdown", maxSlowdown,
                 "iteration time frequency scaling may add, as a fraction (default 0.01)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--tensor-parallel", tp,
                 "tensor-parallel degrees to consider (inside a node)")
      ->delimiter(',');
  app.add_option("--max-micro-batches", maxMicro,
                 "largest micro-batch count to consider (0: any divisor of "
                 "the global batch)");
  app.add_option("--max-stages-per-group", maxStages,
                 "most pipeline stages one device group may form (0: up to "
                 "the layer count)");
  app.add_option("--exhaustive-limit", exhaustiveLimit,
                 "search every shape (exact) up to this many, local search "
                 "above");
  app.add_flag("--no-subsets", noSubsets,
               "use every device group (never leave one idle)");
  app.add_flag("--no-mixed-stages", noMixed,
               "never put replicas of different kinds in one stage");
  app.add_flag("--equal-replicas", equalReplicas,
               "give all stages of a group the same number of replicas");
  app.add_flag("--explain", explain,
               "with the chosen (or --evaluate'd) plan: where its predicted iteration goes -- "
               "the bottleneck stage's forward and backward over the micro-batches, its sends, "
               "the pipeline's fill and drain, the gradient sync and the optimizer update -- and "
               "each stage's busy time and idle share (also under \"explain\" with --json)");
  app.add_option("--measured", measuredPath,
                 "with --explain: what het-run printed for a run of that plan; each stage's "
                 "measured split per step (kernels, messages, collectives, runtime; averaged "
                 "over its ranks) beside its predicted busy time")
      ->needs("--explain")
      ->needs("--evaluate");
  app.add_flag("--show-model", showModel,
               "print the per-layer costs the planner uses (per sample: "
               "FLOPs, bytes; parameters) and stop");
  app.add_flag("--benchmark", benchmark,
               "print the planner's scaling table (layers x devices x kinds "
               "-> planning time) and its speed against brute force");
  app.footer("Exit status: 0 done; 1 bad input (the file and field are named); 2 bad "
             "command line; 3 nothing fits (in memory, or within --deadline/--budget).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0)
      return app.exit(e); // --help
    std::cerr << "het-plan: error: " << e.what() << " (see --help)\n";
    return UsageError;
  }

  try {
    std::string catalogPath =
        catalogDir.empty() ? DeviceCatalog::defaultDirectory() : catalogDir;
    DeviceCatalog catalog = DeviceCatalog::loadDirectory(catalogPath);
    if (!devicesPath.empty())
      catalog.loadFile(devicesPath, /*replace=*/true);
    if (benchmark) {
      runBenchmark(std::cout, catalog);
      return Ok;
    }
    if ((clusterPath.empty() == inventoryPath.empty()) || modelPath.empty()) {
      std::cerr << "het-plan: error: --model and one of --cluster or --inventory are required "
                   "(see --help)\n";
      return UsageError;
    }
    auto t0 = std::chrono::steady_clock::now();
    ModelDesc model = loadModelFile(modelPath);
    if (model.layers.empty())
      fail(modelPath, "", "the model has no layers");
    if (globalBatch == 0)
      globalBatch = model.batch > 0 ? model.batch : 512;
    if (throughput > 0) {
      double fromThroughput = double(globalBatch) / throughput;
      deadline = deadline > 0 ? std::min(deadline, fromThroughput) : fromThroughput;
    }
    Precision precision = Precision::Auto;
    parsePrecision(precisionName, precision);
    TrainingSetup setup = TrainingSetup::of(model, precision);
    setup.recompute = recomputeName == "full"        ? Recompute::Full
                      : recomputeName == "selective" ? Recompute::Selective
                                                     : Recompute::None;
    if (setup.recompute == Recompute::Selective && !model.pricesSelective())
      fail(modelPath, "",
           "--recompute selective: the planner prices it from a model's IR (it analyses "
           "het-recompute's selective mode), and this model file gives none (use full, or "
           "an .mlir model)");
    setup.zero = zeroName == "auto" ? 0 : std::stoi(zeroName);
    if (!inventoryPath.empty()) {
      if (deadline <= 0) {
        std::cerr << "het-plan: error: --inventory needs --deadline or --throughput (see "
                     "--help)\n";
        return UsageError;
      }
      for (const auto &[given, name] :
           {std::pair<bool, const char *>{!profilesDir.empty(), "--profiles"},
            {!tuningDbPath.empty(), "--tuning-db"},
            {noSubsets, "--no-subsets"},
            {objectiveName == "energy", "--objective energy"}})
        if (given) {
          std::cerr << "het-plan: error: --inventory chooses the least-cost mix by the "
                       "roofline and leaves offers out; it takes no "
                    << name << " (see --help)\n";
          return UsageError;
        }
      Inventory inventory = loadInventory(inventoryPath, catalog);
      het::sim::MixOptions mix;
      mix.planner.globalBatch = globalBatch;
      mix.planner.tensorParallel = tp;
      mix.planner.maxMicroBatches = maxMicro;
      mix.planner.maxStagesPerGroup = maxStages;
      mix.planner.exhaustiveLimit = exhaustiveLimit;
      mix.planner.mixedStages = !noMixed;
      mix.planner.unevenReplicas = !equalReplicas;
      mix.planner.objective = {ObjectiveKind::Cost, deadline, budget};
      mix.setup = setup;
      mix.failures = failureAssumptions;
      mix.keep = top;
      return printRental(std::cout, inventory, model, catalog, mix, asJson, writePlanPath,
                         writeClusterPath);
    }
    Cluster cluster = loadCluster(clusterPath, catalog);
    if (showModel) {
      printModel(std::cout, model);
      return Ok;
    }
    ProfileSet profiles;
    if (!profilesDir.empty()) {
      profiles.loadDirectory(profilesDir, catalog, cluster.kindNames());
      for (const std::string &skipped : profiles.skipped())
        std::cerr << "het-plan: note: " << skipped << "\n";
      profiles.checkLayerCount(model.layers.size());
    }
    MeasuredCommunication communication;
    bool communicationFound = false;
    std::vector<std::string> tuningReport;
    if (!tuningDbPath.empty())
      tuningReport = het::tune::readPlannerRecordsOrWarn(
          tuningDbPath, model, cluster, profiles, communication, communicationFound, "het-plan",
          "planning with the roofline and the cluster's links", std::cerr);
    CostModel cost(model, cluster, profiles.empty() ? nullptr : &profiles, setup);
    if (communicationFound)
      cost.setMeasuredCommunication(&communication);
    Objective objective;
    parseObjectiveKind(objectiveName, objective.kind);
    objective.deadlineSeconds = deadline;
    objective.budgetPerHour = budget;
    frequencyScaling |= objective.kind == ObjectiveKind::Energy;
    checkObjectiveInputs(cluster, objective);
    FrequencyScalingOptions scalingOptions;
    scalingOptions.maxSlowdown = maxSlowdown;
    auto printTuning = [&](std::ostream &os) {
      for (const std::string &line : tuningReport)
        os << "tuning database: " << line << "\n";
    };

    if (!evaluatePath.empty()) {
      Plan plan = loadPlan(evaluatePath, cluster, model);
      cost.trainIn(plan.formats, evaluatePath);
      Evaluation ev = cost.evaluate(plan);
      if (!ev.problem.empty() && ev.problem != "does not fit in device memory")
        fail(evaluatePath, "stages", ev.problem);
      PlanEconomics economics = assessPlan(cost, plan, ev, objective);
      if (asJson) {
        json out = evaluationToJson(ev);
        out["economics"] = economicsToJson(economics);
        if (explain)
          out["explain"] = breakdownToJson(explainIteration(plan, ev));
        if (!measuredPath.empty())
          out["explain"]["measured"] = measuredSplitToJson(
              measuredSplitFromLog(readMeasuredLog(measuredPath), plan.stages.size(),
                                   measuredPath));
        if (!economics.violated.empty())
          out["violates"] = economics.violated;
        if (frequencyScaling)
          out["frequency_scaling"] = frequencyScalingToJson(
              scaleStageFrequencies(cost, plan, ev, scalingOptions), maxSlowdown);
        std::cout << out.dump(2) << "\n";
      } else {
        std::cout << "het-plan: evaluating " << evaluatePath << " on "
                  << cluster.name << " for " << model.name << "\n";
        printTuning(std::cout);
        std::cout
                  << "predicted iteration " << formatSeconds(ev.iterationTime)
                  << " (pipeline " << formatSeconds(ev.pipelineTime)
                  << " + gradient sync and optimizer "
                  << formatSeconds(ev.syncTime) << "), bottleneck s"
                  << ev.bottleneck << "\n";
        if (ev.sharedCoresTime > 0)
          std::cout << "the ranks outnumber this host's " << communication.cores
                    << " cores: the iteration simulated on them, each stage's sync and "
                       "optimizer beside the others' backwards, takes "
                    << formatSeconds(ev.sharedCoresTime) << "\n";
        printPlan(std::cout, cost, plan, ev);
        if (explain) {
          IterationBreakdown breakdown = explainIteration(plan, ev);
          printBreakdown(std::cout, breakdown);
          if (!measuredPath.empty())
            printMeasuredSplit(std::cout, breakdown,
                               measuredSplitFromLog(readMeasuredLog(measuredPath),
                                                    plan.stages.size(), measuredPath),
                               measuredPath);
        }
        printEconomics(std::cout, economics);
        if (!economics.violated.empty())
          std::cout << "does not meet the objective's limit: " << economics.violated << "\n";
        if (frequencyScaling)
          printFrequencyScaling(std::cout, scaleStageFrequencies(cost, plan, ev, scalingOptions),
                                maxSlowdown);
        if (!ev.fits)
          std::cout << "does not fit: a device is short by "
                    << formatBytes(ev.worstShortfallBytes) << "\n";
      }
      if (!svgPath.empty())
        writeFile(svgPath, renderGanttSvg(cost, plan, ev));
      return Ok;
    }

    PlannerOptions options;
    options.globalBatch = globalBatch;
    options.topK = top;
    options.tensorParallel = tp;
    options.maxMicroBatches = maxMicro;
    options.maxStagesPerGroup = maxStages;
    options.exhaustiveLimit = exhaustiveLimit;
    options.allowSubsets = !noSubsets;
    options.mixedStages = !noMixed;
    options.unevenReplicas = !equalReplicas;
    options.objective = objective;
    PlanResult best = planPipeline(cost, options);
    // Nothing fits in memory: shard state over replicas and recompute
    // activations, where allowed: the savers (MemorySavers.h) whose best
    // plan is best by the objective.
    std::string recomputeReason =
        recomputeName == "full" || recomputeName == "selective" ? "--recompute " + recomputeName
                                                                : "";
    std::string zeroReason = zeroName == "auto" || zeroName == "0" ? "" : "--zero " + zeroName;
    // Chosen because nothing fit without them: then each stage keeps them
    // only where it needs them (MemorySavers.h; the plans say which).
    bool recomputeChosen = false, zeroChosen = false;
    if (best.plans.empty() && best.constraintMisses == 0 &&
        (recomputeName == "auto" || zeroName == "auto")) {
      SaverChoice chosen = chooseMemorySavers(cost, options, recomputeName == "auto",
                                              zeroName == "auto");
      if (!chosen.result.plans.empty()) {
        best = std::move(chosen.result);
        recomputeChosen = recomputeName == "auto" && chosen.recompute != Recompute::None;
        zeroChosen = zeroName == "auto" && chosen.zero > 0;
        if (recomputeChosen)
          recomputeReason = "no plan fits in device memory without it";
        if (zeroChosen)
          zeroReason = "no plan fits in device memory without it";
      }
    }
    // Experts spread over replicas where that plans better (ExpertPlacement.h).
    int expertStages = expertsName == "auto" ? placeExperts(cost, options, best.plans) : 0;
    // Nothing meets the deadline or budget: the fastest plan says how far off.
    PlanResult fastest;
    if (best.plans.empty() && best.constraintMisses > 0) {
      PlannerOptions unconstrained = options;
      unconstrained.topK = 1;
      unconstrained.objective = {};
      fastest = planPipeline(cost, unconstrained);
    }

    // Baselines: the same cluster split uniformly, and each vendor alone,
    // by the same objective without its limits (what they would take).
    std::vector<Baseline> baselines;
    PlannerOptions unlimited = options;
    unlimited.objective.deadlineSeconds = unlimited.objective.budgetPerHour = 0;
    {
      PlannerOptions uniform = unlimited;
      uniform.topK = 1;
      uniform.split = SplitPolicy::Uniform;
      uniform.allowSubsets = false;
      uniform.mixedStages = false; // Megatron: each stage on one kind,
      uniform.unevenReplicas = false; // every stage as wide as the others
      baselines.push_back({"uniform layer split, all groups (Megatron-style)",
                           planPipeline(cost, uniform)});
    }
    // Single-vendor subsets; when every group has one vendor, single-kind.
    std::map<std::string, std::vector<int>> byVendor;
    for (size_t g = 0; g < cluster.groups.size(); ++g)
      byVendor[cluster.groups[g].spec->vendor].push_back(int(g));
    if (byVendor.size() == 1) {
      byVendor.clear();
      for (size_t g = 0; g < cluster.groups.size(); ++g)
        byVendor[cluster.groups[g].kind].push_back(int(g));
    }
    std::vector<std::unique_ptr<Cluster>> subsets;
    std::vector<std::unique_ptr<CostModel>> subsetCosts;
    if (byVendor.size() > 1)
      for (const auto &[vendor, groups] : byVendor) {
        subsets.push_back(std::make_unique<Cluster>(cluster.subset(groups)));
        subsetCosts.push_back(std::make_unique<CostModel>(
            model, *subsets.back(), profiles.empty() ? nullptr : &profiles, setup));
        if (communicationFound)
          subsetCosts.back()->setMeasuredCommunication(&communication);
        PlannerOptions single = unlimited;
        single.topK = 1;
        std::string label = vendor + " only (";
        for (size_t i = 0; i < groups.size(); ++i)
          label += (i ? ", " : "") + cluster.groups[groups[i]].kind;
        label +=
            ", " + std::to_string(subsets.back()->deviceCount()) + " devices)";
        baselines.push_back({label, planPipeline(*subsetCosts.back(), single)});
      }
    double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();

    double bestValue = best.plans.empty() ? INFINITY : best.plans.front().economics.objective;
    auto describeFastest = [&]() {
      std::string text = "no plan meets";
      if (deadline > 0)
        text += " the deadline of " + formatSeconds(deadline);
      if (budget > 0) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s the budget of USD %.2f per hour",
                      deadline > 0 ? " and" : "", budget);
        text += buf;
      }
      text += " (" + std::to_string(best.constraintMisses) + " shapes fit in memory but miss it)";
      if (!fastest.plans.empty()) {
        const RankedPlan &f = fastest.plans.front();
        text += "; the fastest plan takes " + formatSeconds(f.evaluation.iterationTime);
        if (f.economics.priced) {
          char buf[64];
          std::snprintf(buf, sizeof buf, " on devices costing USD %.2f per hour",
                        f.economics.pricePerHour);
          text += buf;
        }
      }
      return text;
    };
    if (asJson) {
      json out;
      out["model"] = model.name;
      out["cluster"] = cluster.name;
      out["precision"] = toString(setup.precision);
      out["formats"] = json::object();
      for (size_t g = 0; g < cluster.groups.size(); ++g)
        out["formats"][cluster.groups[g].name] = cost.format(int(g));
      out["objective"] = {{"kind", toString(objective.kind)}, {"unit", unitOf(objective.kind)}};
      if (deadline > 0)
        out["objective"]["deadline_s"] = deadline;
      if (budget > 0)
        out["objective"]["budget_usd_per_hour"] = budget;
      out["gradient_bytes_per_param"] = setup.gradientBytesPerParam;
      out["recompute"] = toString(cost.setup().recompute);
      out["zero"] = cost.setup().zero;
      out["exact"] = best.exact;
      out["planning_seconds"] = total;
      out["plans"] = json::array();
      for (const auto &p : best.plans) {
        json pj = planToJson(p.plan, cluster, model);
        pj["predicted"] = evaluationToJson(p.evaluation);
        pj["economics"] = economicsToJson(p.economics);
        if (explain && out["plans"].empty())
          pj["explain"] = breakdownToJson(explainIteration(p.plan, p.evaluation));
        out["plans"].push_back(pj);
      }
      if (!best.plans.empty() && frequencyScaling)
        out["frequency_scaling"] = frequencyScalingToJson(
            scaleStageFrequencies(cost, best.plans.front().plan, best.plans.front().evaluation,
                                  scalingOptions),
            maxSlowdown);
      if (best.plans.empty() && best.constraintMisses > 0)
        out["misses_objective_limits"] = describeFastest();
      else if (best.plans.empty())
        out["does_not_fit"] = {
            {"smallest_shortfall_bytes", best.smallestShortfallBytes},
            {"where", best.shortfallWhere}};
      out["baselines"] = json::array();
      for (const auto &b : baselines) {
        json bj = {{"name", b.label}};
        if (b.result.plans.empty()) {
          bj["fits"] = false;
        } else {
          const RankedPlan &p = b.result.plans.front();
          bj["iteration_s"] = p.evaluation.iterationTime;
          bj["objective"] = p.economics.objective;
          bj["ratio"] = p.economics.objective / bestValue;
        }
        out["baselines"].push_back(bj);
      }
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << "het-plan: model " << model.name << " ("
                << model.layers.size() << " layers, "
                << humanCount(model.totalParams()) << " parameters, " << model.dtype
                << ", " << describeFormats(cost) << ", " << setup.gradientBytesPerParam
                << "-byte gradients), cluster " << cluster.name << " ("
                << cluster.deviceCount() << " devices in "
                << cluster.groups.size() << " groups), global batch "
                << globalBatch << "\n";
      if (!recomputeReason.empty())
        std::cout << "activation recomputation: " << toString(cost.setup().recompute) << " in "
                  << (recomputeChosen ? "the stages that need it" : "every stage") << " ("
                  << recomputeReason << ")\n";
      if (!zeroReason.empty())
        std::cout << "sharded data parallelism: " << (zeroChosen ? "up to " : "") << "ZeRO-"
                  << cost.setup().zero << " in "
                  << (zeroChosen ? "the stages of several replicas that need it"
                                 : "every stage of several replicas")
                  << " (" << zeroReason << ")\n";
      if (expertStages > 0)
        std::cout << "expert parallelism: in " << expertStages
                  << " stage(s) of the listed plans, experts per replica group as each plan "
                     "says (it plans better than every replica holding every expert)\n";
      if (objective.kind != ObjectiveKind::Time || objective.constrained()) {
        std::cout << "objective: least " << toString(objective.kind) << " per iteration";
        if (deadline > 0)
          std::cout << ", iteration at most " << formatSeconds(deadline);
        if (budget > 0)
          std::cout << ", devices at most USD " << budget << " per hour";
        std::cout << "\n";
      }
      std::cout << "search: " << best.shapes << " shapes, "
                << (best.exact ? "exact (branch and bound)"
                               : "local search (space too large to enumerate)")
                << ", " << best.shapesEvaluated << " evaluated, "
                << best.shapesPruned << " pruned; planning took "
                << formatSeconds(total) << " in all\n";
      printTuning(std::cout);
      if (!profiles.empty())
        std::cout << "profiles: " << profiles.size()
                  << " tables (measured times replace the roofline)\n";
      if (best.plans.empty() && best.constraintMisses > 0) {
        std::cout << describeFastest() << "\n";
      } else if (best.plans.empty()) {
        if (std::isfinite(best.smallestShortfallBytes))
          std::cout << "does not fit: no plan fits in device memory; the "
                       "smallest shortfall is "
                    << formatBytes(best.smallestShortfallBytes) << " on "
                    << best.shortfallWhere << "\n";
        else
          std::cout << "no plan: " << best.shortfallWhere << "\n";
      }
      for (size_t i = 0; i < best.plans.size(); ++i) {
        const auto &p = best.plans[i];
        std::cout << "\nplan " << i + 1 << ": iteration "
                  << formatSeconds(p.evaluation.iterationTime) << " (pipeline "
                  << formatSeconds(p.evaluation.pipelineTime)
                  << " + gradient sync and optimizer "
                  << formatSeconds(p.evaluation.syncTime) << "), "
                  << p.plan.microBatches << " micro-batches, 1F1B\n";
        printPlan(std::cout, cost, p.plan, p.evaluation);
        if (explain && i == 0)
          printBreakdown(std::cout, explainIteration(p.plan, p.evaluation));
        printEconomics(std::cout, p.economics);
      }
      if (!best.plans.empty() && frequencyScaling)
        printFrequencyScaling(std::cout,
                              scaleStageFrequencies(cost, best.plans.front().plan,
                                                    best.plans.front().evaluation, scalingOptions),
                              maxSlowdown);
      std::cout << "\ncompared with (same global batch):\n";
      for (const auto &b : baselines) {
        std::cout << "  " << b.label << ": ";
        if (b.result.plans.empty()) {
          if (std::isfinite(b.result.smallestShortfallBytes))
            std::cout << "does not fit (short by "
                      << formatBytes(b.result.smallestShortfallBytes) << ")\n";
          else
            std::cout << "impossible: " << b.result.shortfallWhere << "\n";
          continue;
        }
        const RankedPlan &p = b.result.plans.front();
        std::cout << formatSeconds(p.evaluation.iterationTime);
        if (objective.kind != ObjectiveKind::Time)
          std::cout << ", " << formatObjective(p.economics.objective, objective.kind);
        if (best.plans.empty()) {
          std::cout << "\n";
          continue;
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.2fx", p.economics.objective / bestValue);
        std::cout << ", chosen plan is " << buf
                  << (objective.kind == ObjectiveKind::Time     ? " faster\n"
                      : objective.kind == ObjectiveKind::Cost ? " cheaper\n"
                                                               : " less energy\n");
      }
    }
    if (best.plans.empty())
      return NothingFits; // also when nothing meets the deadline or budget
    if (!svgPath.empty())
      writeFile(svgPath, renderGanttSvg(cost, best.plans.front().plan,
                                        best.plans.front().evaluation));
    if (!writePlanPath.empty()) {
      json pj = planToJson(best.plans.front().plan, cluster, model);
      pj["predicted"] = evaluationToJson(best.plans.front().evaluation);
      writeFile(writePlanPath, pj.dump(2) + "\n");
    }
    if (!writePlansDir.empty()) {
      std::error_code error;
      std::filesystem::create_directories(writePlansDir, error);
      if (error)
        fail(writePlansDir, "", "cannot create the directory: " + error.message());
    }
    if (!writePlansDir.empty())
      for (size_t i = 0; i < best.plans.size(); ++i) {
        json pj = planToJson(best.plans[i].plan, cluster, model);
        pj["predicted"] = evaluationToJson(best.plans[i].evaluation);
        writeFile(writePlansDir + "/plan-" + std::to_string(i + 1) + ".json", pj.dump(2) + "\n");
      }
    return Ok;
  } catch (const PlanError &e) {
    std::cerr << "het-plan: error: " << e.what() << "\n";
    return InputError;
  } catch (const std::exception &e) {
    // A field the readers do not check by name: still an input error, not a
    // crash; name the inputs.
    std::cerr << "het-plan: error: " << clusterPath << ", " << modelPath
              << (evaluatePath.empty() ? "" : ", " + evaluatePath)
              << (profilesDir.empty() ? "" : ", " + profilesDir)
              << ": malformed input: " << e.what() << "\n";
    return InputError;
  }
}
