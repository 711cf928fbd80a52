//===- Attempts.cpp - run a job attempt after attempt ---------------------===//
#include "Attempts.h"

#include "het/Plan/ClusterSurvivors.h"
#include "het/Plan/MeasuredPlans.h"
#include "het/Tune/TuningDatabase.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

namespace hetrun {

std::vector<std::vector<std::pair<std::string, std::string>>>
deviceEnvironment(const het::plan::Cluster &cluster) {
  std::vector<std::vector<std::pair<std::string, std::string>>> env;
  for (const auto &g : cluster.groups)
    for (int i = 0; i < g.count(); ++i)
      env.push_back({{"HET_DEVICE_GROUP", g.name}, {"HET_DEVICE_KIND", g.kind}});
  return env;
}

/// het-run --tuning-db: the finished pipeline's median iteration time
/// under its plan key, for het-compile --plan auto --tuning-db to rank the
/// plans that ran by what they measured. A job that printed no key or no
/// time records nothing and says why.
static void recordMeasuredPlan(const std::string &path, const JobResult &r) {
  if (r.planKey.empty() || r.iterationSeconds <= 0) {
    std::fprintf(stderr,
                 "het-run: --tuning-db: nothing recorded: the program printed %s (a pipeline "
                 "built by het-compile --plan or --cluster prints both)\n",
                 r.planKey.empty() ? "no plan key" : "no iteration time");
    return;
  }
  try {
    auto db = het::tune::TuningDatabase::open(path, het::tune::TuningDatabase::Mode::ReadWrite);
    het::tune::Record record;
    record.kind = "plan";
    record.workload = het::plan::measuredPlanWorkload(r.planKey);
    record.device = "job";
    record.host = het::tune::hostIdentity();
    record.hetVersion = het::tune::hetVersion();
    record.choice = r.planKey;
    record.seconds = r.iterationSeconds;
    record.details = nlohmann::json{{"predicted_s", r.predictedSeconds},
                                    {"how", "het-run: the slowest rank's median iteration"}}
                         .dump();
    record.measuredAt = het::tune::utcNow();
    db->put(record);
    std::fprintf(stderr, "het-run: recorded plan %s: %.3f ms per iteration, in %s\n",
                 r.planKey.c_str(), 1e3 * r.iterationSeconds, path.c_str());
  } catch (const het::tune::DatabaseError &e) {
    std::fprintf(stderr, "het-run: --tuning-db: nothing recorded: %s\n", e.what());
  }
}

int runAttempts(Attempts &setup) {
  JobOptions &opts = setup.opts;
  std::unique_ptr<het::plan::Cluster> &cluster = setup.cluster;
  het::plan::DeviceCatalog &catalog = *setup.catalog;
  JobMetrics *metrics = setup.metrics;
  ElasticPlans *plans = setup.plans;
  LostDevices &lostDevices = *setup.lostDevices;
  Coordinator *coordinator = setup.coordinator;
  const bool elastic = plans != nullptr;
  const int maxRestarts = setup.maxRestarts;
  int spares = setup.spares;
  const double lossGraceS = setup.lossGraceS, joinTimeoutS = setup.joinTimeoutS;
  int nranks = opts.nranks;
  int failures = 0;
  int64_t lostAtStep = -1; // the last step reported before devices were lost
  // The job's end: agents hear it too.
  auto finish = [&](int status, const std::string &why) {
    if (coordinator)
      coordinator->finish(status, why);
    return status;
  };
  if (elastic) {
    // Re-admitted devices (or agents that joined): the running ranks stop
    // after their next checkpoint, and the job is planned again with them.
    opts.env.push_back({"HET_STOP_AT_CHECKPOINT", "1"});
    opts.stopAtCheckpoint = [&] {
      return coordinator ? coordinator->newcomers() : lostDevices.anyAdmitted();
    };
  }
  // Restarts the job on the cluster without `still` lost devices: the
  // executable built for those devices before, or a new plan.
  auto switchPlan = [&](const std::map<std::string, int> &still, const std::string &why) {
    metrics->countReplan();
    ElasticPlans::Choice c;
    try {
      c = plans->forLost(still);
      cluster = std::make_unique<het::plan::Cluster>(het::plan::loadCluster(c.clusterFile, catalog));
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: elastic: cannot make the cluster of the devices left: %s\n",
                   e.what());
      return false;
    }
    std::string devices;
    for (const auto &g : cluster->groups)
      devices += (devices.empty() ? "" : ", ") + g.name + " x" + std::to_string(g.count());
    if (c.compiled) {
      std::fprintf(stderr,
                   "het-run: elastic: %s; re-planning for the %d devices %s (%s; %s) with %s "
                   "--plan auto, global batch %lld\n",
                   why.c_str(), cluster->deviceCount(), still.empty() ? "of the cluster" : "left",
                   devices.c_str(), c.clusterFile.c_str(), plans->build().compiler.c_str(),
                   static_cast<long long>(plans->build().globalBatch));
      std::fflush(stderr);
      try {
        plans->compile(c);
      } catch (const std::exception &e) {
        std::fprintf(stderr, "het-run: elastic: %s\n", e.what());
        return false;
      }
      for (const std::string &line : c.summary)
        std::fprintf(stderr, "het-run: elastic: new plan: %s\n", line.c_str());
      std::fprintf(stderr, "het-run: elastic: planned and compiled in %.1f s\n", c.seconds);
    } else {
      std::fprintf(stderr,
                   "het-run: elastic: %s; the job ran on these %d devices (%s) before: no "
                   "re-planning, %s is their executable\n",
                   why.c_str(), cluster->deviceCount(), devices.c_str(), c.program.c_str());
    }
    nranks = cluster->deviceCount();
    opts.nranks = nranks;
    opts.argv.front() = c.program;
    opts.rankEnv = deviceEnvironment(*cluster);
    std::fprintf(stderr,
                 "het-run: elastic: restarting on %d ranks as %s from the newest checkpoint "
                 "(%s)\n",
                 nranks, c.program.c_str(),
                 c.compiled ? "resharded to the new plan" : "resharded if another plan wrote it");
    return true;
  };
  auto groupsText = [](const std::map<std::string, int> &byGroup) {
    std::string text;
    for (const auto &[g, n] : byGroup)
      text += (text.empty() ? "" : ", ") + g + " x" + std::to_string(n);
    return text;
  };
  if (coordinator) {
    // Every node's agent, or a plan for those that came.
    bool all = coordinator->waitForAgents(joinTimeoutS);
    if (int sig = stopSignal())
      return finish(128 + sig, "interrupted");
    if (!all) {
      if (!coordinator->anyAgent()) {
        std::fprintf(stderr, "het-run: no agent joined within %g s\n", joinTimeoutS);
        return finish(1, "no agent joined");
      }
      char wait[32];
      std::snprintf(wait, sizeof wait, "%g", joinTimeoutS);
      if (!switchPlan(coordinator->missing(), std::string("agents missing after ") + wait + " s (" +
                                   coordinator->agentsText() + ")"))
        return finish(1, "planning failed");
    }
  }
  for (int attempt = 0;; ++attempt) {
    opts.attempt = attempt;
    JobResult r;
    if (metrics)
      metrics->beginAttempt(attempt, nranks,
                            cluster ? het::plan::rankGroups(*cluster) : std::vector<std::string>{});
    try {
      // A fresh token and port per attempt.
      r = coordinator ? coordinator->run(*cluster, opts) : runJob(opts);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return finish(1, e.what());
    }
    if (metrics)
      metrics->endAttempt(r);
    if (lostAtStep >= 0 && r.resumedStep >= 0) {
      // Steps are counted from 0: resuming at R after finishing step L
      // does L + 1 - R steps again.
      std::fprintf(stderr,
                   "het-run: elastic: resumed from step %lld; %lld steps done again (the last "
                   "step finished before the restart was %lld)\n",
                   static_cast<long long>(r.resumedStep),
                   static_cast<long long>(std::max<int64_t>(0, lostAtStep + 1 - r.resumedStep)),
                   static_cast<long long>(lostAtStep));
      lostAtStep = -1;
    }
    if (r.ok && r.stoppedStep >= 0) {
      // Stopped as asked: devices were re-admitted.
      lostAtStep = r.stoppedStep - 1; // the steps done again: none
      std::string back = coordinator ? "agents joined: " + coordinator->agentsText()
                                     : groupsText(lostDevices.takeAdmitted());
      if (!switchPlan(coordinator ? coordinator->missing() : lostDevices.lost(),
                      "the ranks stopped after the checkpoint of step " +
                          std::to_string(r.stoppedStep) + " for the re-admitted devices (" +
                          back + ")"))
        return finish(1, "planning failed");
      continue;
    }
    if (r.ok) {
      std::fprintf(stderr, "het-run: all %d ranks finished in %.3f s\n", nranks, r.seconds);
      if (!setup.tuningDb.empty())
        recordMeasuredPlan(setup.tuningDb, r);
      return finish(0, "the job is done");
    }
    for (size_t k = 0; k < r.fates.size(); ++k)
      std::fprintf(stderr, "het-run: rank %d %s after %.3f s\n", opts.rankOffset + int(k),
                   r.fates[k].describe().c_str(), r.fates[k].seconds);
    std::string who = r.failedRank >= 0 ? "rank " + std::to_string(r.failedRank) + " " : "";
    if (int sig = stopSignal()) {
      std::fprintf(stderr, "het-run: interrupted: %s%s\n", who.c_str(), r.cause.c_str());
      return finish(128 + sig, "interrupted");
    }
    std::vector<int> lost = elastic ? lostRanks(r) : std::vector<int>{};
    if (!lost.empty() && static_cast<int>(lost.size()) == nranks) {
      std::fprintf(stderr, "het-run: elastic: every rank's device is lost; nothing to continue on\n");
      return finish(1, "every device is lost");
    }
    if (!lost.empty()) {
      // Devices lost: the same plan on standby devices, the same plan on
      // the devices re-admitted within the grace period, or a new plan.
      std::vector<std::string> groups = het::plan::rankGroups(*cluster);
      std::map<std::string, int> lostPerGroup; // by the groups of the cluster started with
      std::string who;
      try {
        for (int k : lost) {
          ++lostPerGroup[het::plan::originalGroup(plans->originalSpec(), groups[k])];
          who += (who.empty() ? "" : ", ") + std::string("rank ") +
                 std::to_string(opts.rankOffset + k) + " (" + groups[k] + ")";
        }
      } catch (const std::exception &e) {
        std::fprintf(stderr, "het-run: elastic: %s\n", e.what());
        return finish(1, e.what());
      }
      // --elastic always reads the metrics (agents report theirs).
      lostAtStep = coordinator ? coordinator->lastStep() : metrics->lastStep();
      if (spares >= static_cast<int>(lost.size())) {
        spares -= static_cast<int>(lost.size());
        std::fprintf(stderr,
                     "het-run: elastic: lost %s: %s; standby devices take their places (%d "
                     "spare%s left); restarting the same plan from the newest checkpoint\n",
                     who.c_str(), r.cause.c_str(), spares, spares == 1 ? "" : "s");
        continue;
      }
      std::string drained;
      if (coordinator) {
        // A node that lost a device is drained whole; its agent, if still
        // there, quits (Kubernetes restarts the pod, which joins again).
        for (const std::string &a : coordinator->drain(lost))
          drained += (drained.empty() ? "; drained " : ", ") + a;
      } else {
        for (const auto &[g, n] : lostPerGroup)
          lostDevices.lose(g, n);
      }
      auto stillLost = [&] { return coordinator ? coordinator->missing() : lostDevices.lost(); };
      if (lossGraceS > 0) {
        std::fprintf(stderr,
                     "het-run: elastic: lost %s: %s; waiting up to %g s for the devices to be "
                     "re-admitted (%s)\n",
                     who.c_str(), r.cause.c_str(), lossGraceS,
                     coordinator ? "an agent joining: het-run --join"
                                 : ("het-run --admit HOST:" + std::to_string(metrics->port()) +
                                    " --group G").c_str());
        std::fflush(stderr);
        auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(lossGraceS);
        while (!stillLost().empty() && std::chrono::steady_clock::now() < until &&
               !stopSignal())
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (int sig = stopSignal()) {
          std::fprintf(stderr, "het-run: interrupted while waiting for lost devices\n");
          return finish(128 + sig, "interrupted");
        }
      }
      // Admitted now, or earlier while the last run never reached a checkpoint.
      std::map<std::string, int> back =
          coordinator ? std::map<std::string, int>{} : lostDevices.takeAdmitted();
      bool rejoined = coordinator && lossGraceS > 0 && stillLost().empty();
      std::string why = "lost " + who + (back.empty() && !rejoined ? " for good" : "") + ": " +
                        r.cause + drained;
      if (!back.empty())
        why += "; re-admitted " + groupsText(back) +
               (lossGraceS > 0 ? " within the grace period" : "");
      if (rejoined)
        why += "; agents joined within the grace period";
      if (lossGraceS > 0 && !stillLost().empty()) {
        char grace[32];
        std::snprintf(grace, sizeof grace, "%g", lossGraceS);
        why += std::string("; not re-admitted within ") + grace + " s: " + groupsText(stillLost());
      }
      if (!switchPlan(stillLost(), why))
        return finish(1, "planning failed");
      continue;
    }
    if (failures++ >= maxRestarts) {
      std::fprintf(stderr, "het-run: job failed: %s%s%s\n", who.c_str(), r.cause.c_str(),
                   maxRestarts ? (" (after " + std::to_string(maxRestarts) + " restarts)").c_str() : "");
      return finish(1, "the job failed: " + who + r.cause);
    }
    std::fprintf(stderr, "het-run: %s%s; restarting the job (restart %d of %d)\n", who.c_str(),
                 r.cause.c_str(), failures, maxRestarts);
  }
}

} // namespace hetrun
