//===- het-sim.cpp - a plan over many iterations, failures and all --------===//
//
// A thin driver over lib/Sim: reads a cluster, a model and a plan (as
// het-plan writes it), simulates many iterations pass by pass (noise,
// stragglers, sends queued on their links), then a long run with failures,
// spot preemptions and checkpoints; prints the iteration-time distribution,
// utilization (HETHUB's definition), goodput and the checkpoint interval
// that serves it best next to Young's and Daly's.
//
//===----------------------------------------------------------------------===//
#include "het/Plan/ClusterSpec.h"
#include "het/Plan/CostModel.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/GanttSvg.h"
#include "het/Plan/ModelFromIR.h"
#include "het/Sim/IterationSampler.h"
#include "het/Sim/PlanFailures.h"
#include "het/Sim/Reliability.h"
#include "het/Sim/Utilization.h"
#include "het/Tune/StageProfiles.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

using namespace het::plan;
using namespace het::sim;
using nlohmann::json;

namespace {

enum ExitCode { Ok = 0, InputError = 1, UsageError = 2 };

std::string seconds(double s) {
  char buf[64];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%.2f h", s / 3600);
  else if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", 100 * x);
  return buf;
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path);
  if (!out)
    fail(path, "", std::string("cannot write file: ") + std::strerror(errno));
  out << text;
}

/// KIND=HOURS pairs; the kind must be one the cluster uses.
std::map<std::string, double> parseMtbf(const std::vector<std::string> &pairs,
                                        const Cluster &cluster, const DeviceCatalog &catalog) {
  std::map<std::string, double> out;
  for (const std::string &p : pairs) {
    size_t eq = p.find('=');
    char *end = nullptr;
    double hours = eq == std::string::npos ? 0 : std::strtod(p.c_str() + eq + 1, &end);
    if (eq == std::string::npos || !end || *end || hours <= 0)
      fail("--mtbf", p, "must be KIND=HOURS with HOURS > 0");
    const DeviceSpec *spec = catalog.find(p.substr(0, eq));
    std::vector<std::string> kinds = cluster.kindNames();
    if (!spec || std::find(kinds.begin(), kinds.end(), spec->name) == kinds.end())
      fail("--mtbf", p, "'" + p.substr(0, eq) + "' is not a kind of cluster " + cluster.name);
    out[spec->name] = hours;
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"het-sim: simulate a plan over many iterations (per-pass noise, stragglers, "
               "sends queued on their links) and over a long run (failures, spot "
               "preemptions, checkpoints): iteration-time distribution, utilization, "
               "goodput and the best checkpoint interval"};
  std::string clusterPath, modelPath, planPath, catalogDir, devicesPath, tuningDbPath, svgPath,
      precisionName = "auto";
  int iterations = 1000, trials = 10;
  long checkpointEvery = -1;
  uint64_t seed = 1;
  Variability variability;
  bool noLinkQueues = false, failures = false, asJson = false;
  FailureAssumptions assumptions;
  double hours = 720;
  std::vector<std::string> mtbfPairs, spotGroups;
  app.add_option("--cluster", clusterPath, "cluster spec (JSON)")->required();
  app.add_option("--model", modelPath, "model: het IR (.mlir) or a model JSON")->required();
  app.add_option("--plan", planPath, "plan JSON (het-plan --write-plan)")->required();
  app.add_option("--catalog", catalogDir, "device catalog directory");
  app.add_option("--devices", devicesPath,
                 "device specs replacing the catalog's (JSON, as het-compile --plan auto "
                 "writes PROGRAM.devices.json)");
  app.add_option("--tuning-db", tuningDbPath,
                 "tuning database (het-tune): price passes by this host's measured stage "
                 "profiles and messages, as het-plan --tuning-db does");
  app.add_option("--precision", precisionName, "auto, mixed, bf16, fp16 or fp32 (as het-plan)")
      ->check(CLI::IsMember({"auto", "fp32", "mixed", "bf16", "fp16"}));
  app.add_option("--iterations", iterations, "iterations to simulate pass by pass")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "random seed (runs with one seed are identical)");
  app.add_option("--noise", variability.noise,
                 "spread (sigma of the log) of each pass's duration")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--straggler-probability", variability.stragglerProbability,
                 "chance that a device straggles for an iteration")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--straggler-slowdown", variability.stragglerSlowdown,
                 "how much slower a straggler's stage runs")
      ->check(CLI::Range(1.0, 100.0));
  app.add_flag("--no-link-queues", noLinkQueues,
               "let every send travel at once (as the closed form assumes)");
  app.add_flag("--failures", failures,
               "also simulate a long run with failures, preemptions and checkpoints");
  app.add_option("--hours", hours, "wall-clock hours of each simulated run")
      ->check(CLI::PositiveNumber);
  app.add_option("--trials", trials, "runs to average")->check(CLI::PositiveNumber);
  app.add_option("--mtbf-hours", assumptions.mtbfHours,
                 "mean time between failures of one device (default: Llama 3's H100s)")
      ->check(CLI::PositiveNumber);
  app.add_option("--mtbf", mtbfPairs, "KIND=HOURS: the MTBF of one kind's devices");
  app.add_option("--spot", spotGroups,
                 "device groups rented as spot capacity (repeatable; groups whose cluster spec "
                 "entry says \"market\": \"spot\" are spot without it)");
  app.add_option("--preemptions-per-node-hour", assumptions.preemptionsPerNodeHour,
                 "rate at which a spot node is taken back (default: AWS Spot Instance "
                 "Advisor's '>20% a month' bucket)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--detect-s", assumptions.detectSeconds, "seconds until a loss is noticed")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--restart-s", assumptions.restartSeconds,
                 "seconds to start the job again (processes, rendezvous)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--snapshot-gbs", assumptions.snapshotGBs,
                 "GB/s at which a device copies its state out (the checkpoint stall)")
      ->check(CLI::PositiveNumber);
  app.add_option("--storage-gbs", assumptions.storageGBs,
                 "GB/s at which storage takes the whole checkpoint (until it is durable)")
      ->check(CLI::PositiveNumber);
  app.add_option("--checkpoint-every", checkpointEvery,
                 "iterations between checkpoints (default: the best one found)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--svg", svgPath, "draw the median simulated iteration (SVG)");
  app.add_flag("--json", asJson, "print JSON");
  app.footer("Exit status: 0 done; 1 bad input (the file and field are named); 2 bad command "
             "line.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0)
      return app.exit(e);
    std::cerr << "het-sim: error: " << e.what() << " (see --help)\n";
    return UsageError;
  }
  variability.seed = seed;
  variability.linkQueues = !noLinkQueues;

  try {
    auto t0 = std::chrono::steady_clock::now();
    DeviceCatalog catalog = DeviceCatalog::loadDirectory(
        catalogDir.empty() ? DeviceCatalog::defaultDirectory() : catalogDir);
    if (!devicesPath.empty())
      catalog.loadFile(devicesPath, /*replace=*/true);
    Cluster cluster = loadCluster(clusterPath, catalog);
    ModelDesc model = loadModelFile(modelPath);
    if (model.layers.empty())
      fail(modelPath, "", "the model has no layers");
    Precision precision = Precision::Auto;
    parsePrecision(precisionName, precision);
    const TrainingSetup setup = TrainingSetup::of(model, precision);
    ProfileSet profiles;
    MeasuredCommunication communication;
    bool communicationFound = false;
    std::vector<std::string> tuningReport;
    if (!tuningDbPath.empty())
      tuningReport = het::tune::readPlannerRecordsOrWarn(
          tuningDbPath, model, cluster, profiles, communication, communicationFound, "het-sim",
          "simulating with the roofline and the cluster's links", std::cerr);
    CostModel cost(model, cluster, profiles.empty() ? nullptr : &profiles, setup);
    if (communicationFound)
      cost.setMeasuredCommunication(&communication);
    Plan plan = loadPlan(planPath, cluster, model);
    cost.trainIn(plan.formats, planPath);
    Evaluation ev = cost.evaluate(plan);
    if (!ev.problem.empty())
      fail(planPath, "stages", ev.problem);
    std::map<std::string, double> mtbfOf = parseMtbf(mtbfPairs, cluster, catalog);
    std::set<int> spot;
    for (size_t g = 0; g < cluster.groups.size(); ++g)
      if (cluster.groups[g].spot)
        spot.insert(int(g));
    for (const std::string &name : spotGroups) {
      auto it = std::find_if(cluster.groups.begin(), cluster.groups.end(),
                             [&](const DeviceGroup &g) { return g.name == name; });
      if (it == cluster.groups.end())
        fail("--spot", name, "cluster " + cluster.name + " has no group '" + name + "'");
      spot.insert(int(it - cluster.groups.begin()));
    }

    // The closed form's figure against a replay without noise, stragglers
    // or queues (the same model, pass by pass), then the varied iterations.
    Variability exact;
    exact.noise = 0;
    exact.stragglerProbability = 0;
    exact.linkQueues = variability.linkQueues;
    double replayed = replayIteration(cost, plan, ev, 0, exact).end;
    IterationStats stats = sampleIterations(cost, plan, ev, iterations, variability);
    Utilization util = utilization(cost, plan, stats.mean);
    auto t1 = std::chrono::steady_clock::now();

    // Failures: each device of the plan at its kind's MTBF; spot nodes.
    assumptions.mtbfOfKind = mtbfOf;
    PlanFailures failuresOfPlan = failureModelOf(cost, plan, spot, assumptions);
    const FailureModel &fm = failuresOfPlan.model;
    const std::map<int, int> &devicesOf = failuresOfPlan.devicesOf;
    const double lossesPerHour = fm.failuresPerHour + fm.preemptionsPerHour;
    const double jobMtbf = lossesPerHour > 0 ? 3600 / lossesPerHour : INFINITY;
    double young = youngInterval(fm.checkpointStallSeconds, jobMtbf);
    double daly = dalyInterval(fm.checkpointStallSeconds, jobMtbf);
    // Long runs of short iterations go in steps of several (RunSteps);
    // intervals are rounded to whole steps.
    const RunSteps steps = runSteps(stats.times, hours);
    auto everyOf = [&](double interval) {
      long k = std::max(1L, std::lround(std::min(interval / stats.mean, 1e15)));
      return steps.iterationsOf(steps.stepsOf(k));
    };
    std::vector<IntervalChoice> sweep;
    RunOutcome run;
    long every = checkpointEvery;
    if (failures) {
      sweep = sweepCheckpointInterval(steps.times, fm, hours, trials, seed,
                                      {steps.stepsOf(everyOf(young)),
                                       steps.stepsOf(everyOf(daly))});
      for (IntervalChoice &c : sweep)
        c.every = steps.iterationsOf(c.every);
      if (every < 0)
        every = sweep.front().every;
      else if (every > 0)
        every = steps.iterationsOf(steps.stepsOf(every));
      run = simulateRun(steps.times, fm, every == 0 ? 0 : steps.stepsOf(every), hours, trials,
                        seed);
    }
    auto goodputAt = [&](long k) {
      for (const IntervalChoice &c : sweep)
        if (c.every == k)
          return c.outcome.goodput;
      return 0.0;
    };
    double simSeconds = std::chrono::duration<double>(t1 - t0).count();
    double totalSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    if (!svgPath.empty()) {
      Timeline median = replayIteration(cost, plan, ev, stats.medianIndex, variability);
      char title[160];
      std::snprintf(title, sizeof title, "het-sim's median of %d iterations, %.1f ms (het-plan %.1f ms)",
                    iterations, median.end * 1e3, ev.iterationTime * 1e3);
      writeFile(svgPath, renderTimelineSvg(cost, plan, median, title));
    }

    int devices = 0;
    for (const auto &[g, n] : devicesOf)
      devices += n;
    if (asJson) {
      json out = {
          {"plan", planPath},
          {"cluster", cluster.name},
          {"devices", devices},
          {"stages", plan.stages.size()},
          {"micro_batches", plan.microBatches},
          {"seed", seed},
          {"predicted_s", ev.iterationTime},
          {"replayed_s", replayed},
          {"shared_cores", ev.sharedCoresTime > 0},
          {"tuning_database", tuningReport},
          {"iterations",
           {{"count", iterations},
            {"mean_s", stats.mean},
            {"p50_s", stats.p50},
            {"p90_s", stats.p90},
            {"p99_s", stats.p99},
            {"min_s", stats.min},
            {"max_s", stats.max},
            {"straggled", stats.straggled},
            {"noise", variability.noise},
            {"straggler_probability", variability.stragglerProbability},
            {"straggler_slowdown", variability.stragglerSlowdown},
            {"link_queues", variability.linkQueues}}},
          {"utilization",
           {{"samples_per_s", util.achieved},
            {"stand_alone_samples_per_s", util.standAlone},
            {"ratio", util.ratio},
            {"cluster_ratio", util.clusterRatio}}},
          {"simulate_seconds", simSeconds},
          {"total_seconds", totalSeconds}};
      if (failures) {
        json curve = json::array();
        for (const IntervalChoice &c : sweep)
          curve.push_back({{"every", c.every}, {"goodput", c.outcome.goodput}});
        out["failures"] = {{"failures_per_hour", fm.failuresPerHour},
                           {"preemptions_per_hour", fm.preemptionsPerHour},
                           {"job_mtbf_s", jobMtbf},
                           {"checkpoint_stall_s", fm.checkpointStallSeconds},
                           {"checkpoint_write_s", fm.checkpointWriteSeconds},
                           {"young_every", everyOf(young)},
                           {"daly_every", everyOf(daly)},
                           {"best_every", sweep.front().every},
                           {"every", every},
                           {"hours", hours},
                           {"iterations_per_step", steps.chunk},
                           {"trials", trials},
                           {"goodput", run.goodput},
                           {"failures", run.failures},
                           {"preemptions", run.preemptions},
                           {"lost_s", run.lostSeconds},
                           {"down_s", run.downSeconds},
                           {"checkpoint_s", run.checkpointSeconds},
                           {"sweep", curve}};
      }
      std::cout << out.dump(2) << "\n";
      return Ok;
    }
    std::cout << "het-sim: " << planPath << " on " << cluster.name << " (" << devices
              << " devices, " << plan.stages.size() << " stages, " << plan.microBatches
              << " micro-batches), seed " << seed << "\n";
    for (const std::string &line : tuningReport)
      std::cout << "tuning database: " << line << "\n";
    if (ev.sharedCoresTime > 0)
      std::cout << "ranks share this host's cores: passes simulated under processor sharing\n";
    std::cout << "iteration: het-plan predicts " << seconds(ev.iterationTime)
              << "; replayed pass by pass without noise " << seconds(replayed) << " ("
              << std::showpos << percent(replayed / ev.iterationTime - 1) << std::noshowpos
              << ")\n";
    std::cout << iterations << " iterations (noise " << variability.noise
              << ", stragglers " << variability.stragglerProbability << " per device x"
              << variability.stragglerSlowdown << ", sends "
              << (ev.sharedCoresTime > 0 ? "on this host"
                  : variability.linkQueues ? "queued on their links" : "all at once")
              << "): mean " << seconds(stats.mean) << ", p50 " << seconds(stats.p50) << ", p90 "
              << seconds(stats.p90) << ", p99 " << seconds(stats.p99) << ", min "
              << seconds(stats.min) << ", max " << seconds(stats.max) << "; "
              << stats.straggled << " with a straggler\n";
    std::cout << "utilization (throughput over the sum of each device's stand-alone): "
              << percent(util.ratio) << " of the plan's devices, " << percent(util.clusterRatio)
              << " of the cluster's (" << util.achieved << " samples/s)\n";
    if (failures) {
      std::cout << "failures: " << fm.failuresPerHour << " per hour";
      if (fm.preemptionsPerHour > 0)
        std::cout << " + " << fm.preemptionsPerHour << " spot preemptions per hour";
      std::cout << " (job MTBF " << seconds(jobMtbf) << "); checkpoint stall "
                << seconds(fm.checkpointStallSeconds) << ", durable after "
                << seconds(fm.checkpointWriteSeconds) << "; restart "
                << seconds(fm.detectSeconds + fm.restartSeconds + fm.loadSeconds) << "\n";
      std::cout << "checkpoint interval: Young " << seconds(young) << " (every "
                << everyOf(young) << " iterations, goodput " << percent(goodputAt(everyOf(young)))
                << "), Daly " << seconds(daly) << " (every " << everyOf(daly) << ", "
                << percent(goodputAt(everyOf(daly))) << "), simulated best every "
                << sweep.front().every << " (" << percent(sweep.front().outcome.goodput) << ")\n";
      if (steps.chunk > 1)
        std::cout << "(the long runs advance " << steps.chunk
                  << " iterations at a step; intervals are whole steps)\n";
      std::cout << "goodput over " << hours << " h (" << trials << " runs), checkpoint every "
                << every << " iterations: " << percent(run.goodput) << "; per run "
                << run.failures << " failures, " << run.preemptions << " preemptions, "
                << seconds(run.lostSeconds) << " redone, " << seconds(run.downSeconds)
                << " down, " << seconds(run.checkpointSeconds) << " in checkpoint stalls\n";
    }
    std::cout << "simulated in " << seconds(simSeconds) << " (iterations), "
              << seconds(totalSeconds) << " in all\n";
    return Ok;
  } catch (const PlanError &e) {
    std::cerr << "het-sim: error: " << e.what() << "\n";
    return InputError;
  }
}
