//===- het-run - start and supervise the ranks of a het job ---------------===//
//
//   het-run -n N [--cluster C.json] [--max-restarts K] [--timeout-ms T] ./program [args]
//
// See docs/het-run.md.
//
#include "Admissions.h"
#include "Agent.h"
#include "Coordinator.h"
#include "Elastic.h"
#include "Launchers.h"
#include "Metrics.h"
#include "Supervisor.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/ClusterSurvivors.h"
#include "het/Plan/DeviceCatalog.h"

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <regex>
#include <unistd.h>

namespace {
void onSignal(int sig) { hetrun::requestStop(sig); }
} // namespace

int main(int argc, char **argv) {
  CLI::App app{"usage: het-run [OPTIONS] PROGRAM [ARGS...]\n\n"
               "het-run: start N local ranks of a het job with hetccl's environment bootstrap\n"
               "(HETCCL_ROOT, HETCCL_TOKEN, RANK, WORLD_SIZE, LOCAL_RANK, HET_RESTART), stream\n"
               "their output with a [rank k] prefix, turn any rank's failure into a job error\n"
               "(or a restart of the whole job), and print launchers for multi-machine runs.",
               "het-run"};
  int nranks = 0, maxRestarts = 0, failWaitMs = 0, graceMs = 2000, port = 29500;
  int worldSize = 0, rankOffset = 0;
  long long timeoutMs = 0;
  double jobTimeoutS = 0;
  std::string clusterFile, emitK8s, image = "het:latest", jobName = "het-job", root;
  bool printLaunchers = false, elastic = false;
  int spares = 0, metricsPort = -1;
  std::string metricsAddress = "0.0.0.0", metricsLog, statusOf;
  double lossGraceS = 0, joinTimeoutS = 300;
  std::string admitAt, admitGroup, coordinateAt, joinAt, workDir;
  int admitCount = 0;
  app.add_option("-n,--nranks", nranks, "Number of local ranks (default: the cluster's device count)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--cluster", clusterFile, "Cluster spec (examples/clusters/*.json); ranks get "
                                           "HET_DEVICE_GROUP/HET_DEVICE_KIND in group order")
      ->check(CLI::ExistingFile);
  app.add_option("--max-restarts", maxRestarts, "Restart the whole job up to K times after a failure")
      ->check(CLI::Range(0, 1000));
  app.add_option("--timeout-ms", timeoutMs, "hetccl per-call timeout for the ranks (HETCCL_TIMEOUT_MS)")
      ->check(CLI::Range(1LL, 86400000LL));
  app.add_option("--fail-wait-ms", failWaitMs,
                 "After a rank fails, give the others this long to fail on their own before SIGTERM")
      ->check(CLI::Range(0, 3600000));
  app.add_option("--grace-ms", graceMs, "Time between SIGTERM and SIGKILL")->capture_default_str()
      ->check(CLI::Range(0, 3600000));
  app.add_option("--job-timeout-s", jobTimeoutS, "Fail an attempt that runs longer than this (0: none)")
      ->check(CLI::Range(0.0, 1e7));
  app.add_option("--world-size", worldSize, "WORLD_SIZE when several het-runs form one job (default: -n)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--rank-offset", rankOffset, "RANK of this het-run's first rank (with --world-size)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--root", root, "Rendezvous host:port of an existing job (token from HETCCL_TOKEN); "
                                 "default: 127.0.0.1 and a free port, fresh token");
  app.add_flag("--elastic", elastic,
               "With --cluster: ranks SIGKILLed by someone else than het-run (OOM killer, a "
               "node gone) have lost their devices for good; restart on --spares if any are left, else re-plan for the "
               "devices left (het-compile --plan auto, from PROGRAM.build.json) and resume "
               "from the newest checkpoint under the new plan; devices re-admitted later "
               "(--admit) bring the job back at its next checkpoint");
  app.add_option("--spares", spares, "With --elastic: standby devices that take lost ranks' "
                                     "places before any re-plan")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--loss-grace-s", lossGraceS,
                 "With --elastic and --metrics-port: after a loss, wait this long for the lost "
                 "devices to be re-admitted (het-run --admit) before re-planning without them; "
                 "devices re-admitted later bring the job back at its next checkpoint")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--admit", admitAt,
                 "Tell the --elastic job whose het-run serves metrics at HOST:PORT that lost "
                 "devices of --group are back, and exit");
  app.add_option("--coordinate", coordinateAt,
                 "With --elastic: coordinate a job of several machines from HOST:PORT (port 0: "
                 "a free one, printed): run no rank here, but give each node's ranks to a "
                 "het-run --join agent there; an agent lost loses its node's devices, an agent "
                 "that joins brings them back");
  app.add_option("--join", joinAt,
                 "Offer this machine's devices of --group to the elastic job coordinated at "
                 "HOST:PORT and run the ranks it gives; exits when the job ends");
  app.add_option("--join-timeout-s", joinTimeoutS,
                 "--coordinate: wait this long for every node's agent before planning without "
                 "the missing ones; --join: for the coordinator to answer")
      ->capture_default_str()->check(CLI::Range(0.0, 86400.0));
  app.add_option("--work-dir", workDir, "With --join: keep the executables received here "
                                        "(default: a new directory under /tmp)");
  app.add_option("--group", admitGroup, "With --admit or --join: the device group, as the job's "
                                        "cluster spec names it");
  app.add_option("--count", admitCount, "With --admit: how many of the group's lost devices "
                                        "(default: all)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--metrics-port", metricsPort,
                 "Serve the ranks' live metrics: Prometheus text at /metrics, the ranks by "
                 "device group at /status (0: a free port, printed)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-address", metricsAddress, "Address to serve metrics on")
      ->capture_default_str();
  app.add_option("--metrics-log", metricsLog,
                 "Append every rank's per-step metrics (and each attempt) to F as JSON lines");
  app.add_option("--status", statusOf,
                 "Print the status of the job whose het-run serves metrics at HOST:PORT, and exit");
  app.add_flag("--print-launchers", printLaunchers, "Print equivalent mpirun and srun command lines and exit");
  app.add_option("--emit-k8s", emitK8s, "Write a Kubernetes Volcano Job manifest (needs --cluster) and exit");
  app.add_option("--image", image, "Container image for --emit-k8s")->capture_default_str();
  app.add_option("--job-name", jobName, "Job name for --emit-k8s")->capture_default_str();
  std::string priorityClass;
  app.add_option("--priority-class", priorityClass,
                 "PriorityClass of the --emit-k8s job (default: the cluster's)");
  app.add_option("--port", port, "Rendezvous port for launchers and --emit-k8s")->capture_default_str()->check(CLI::Range(1, 65535));
  app.footer("Everything after the program name is passed to it unchanged:\n"
             "  het-run -n 4 --max-restarts 1 --timeout-ms 2000 ./train --steps 20\n"
             "Exit status: 0 when every rank exits 0; 1 when the job failed (the message names\n"
             "the rank and cause); 2 for a usage error; 130/143 when interrupted.");
  app.prefix_command(); // the first positional word starts the program's command line
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e); // prints help (rc 0) or the error
    return rc == 0 ? 0 : 2;
  }
  // A request to a running het-run's server: its answer, or the reason.
  auto askServer = [](const std::function<std::string()> &request) {
    try {
      std::fputs(request().c_str(), stdout);
      return 0;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 1;
    }
  };
  if (!statusOf.empty())
    return askServer([&] { return hetrun::fetchStatus(statusOf); });
  if (!admitAt.empty()) {
    if (admitGroup.empty()) {
      std::fprintf(stderr, "het-run: --admit needs --group (the group whose devices are back)\n");
      return 2;
    }
    return askServer([&] { return hetrun::admitDevices(admitAt, admitGroup, admitCount); });
  }
  if (!joinAt.empty()) {
    if (admitGroup.empty()) {
      std::fprintf(stderr, "het-run: --join needs --group (the device group this machine offers)\n");
      return 2;
    }
    if (!app.remaining().empty() || !clusterFile.empty() || elastic) {
      std::fprintf(stderr, "het-run: --join takes no program, --cluster or --elastic: the "
                           "coordinator sends what to run\n");
      return 2;
    }
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    hetrun::AgentOptions agent;
    agent.coordinator = joinAt;
    agent.group = admitGroup;
    agent.joinTimeoutS = joinTimeoutS;
    agent.workDir = workDir;
    agent.metricsPort = metricsPort;
    agent.metricsAddress = metricsAddress;
    agent.metricsLog = metricsLog;
    agent.failWaitMs = failWaitMs;
    agent.graceMs = graceMs;
    return hetrun::runAgent(agent);
  }
  if (!admitGroup.empty() || admitCount > 0) {
    std::fprintf(stderr, "het-run: --group and --count go with --admit (--group also with --join)\n");
    return 2;
  }
  if (!coordinateAt.empty() && !elastic) {
    std::fprintf(stderr, "het-run: --coordinate needs --elastic (and --cluster)\n");
    return 2;
  }
  if (!coordinateAt.empty() && spares > 0) {
    std::fprintf(stderr, "het-run: --spares is for local ranks; with --coordinate a standby node "
                         "is an agent that joins when one is lost\n");
    return 2;
  }
  std::vector<std::string> prog = app.remaining();
  if (!prog.empty() && prog.front() == "--") {
    prog.erase(prog.begin());
  } else if (!prog.empty() && prog.front().size() > 1 && prog.front()[0] == '-') {
    // prefix_command() hands unknown options over as the program.
    std::fprintf(stderr, "het-run: unknown option '%s' (see --help; put '--' before a program named like an option)\n",
                 prog.front().c_str());
    return 2;
  }

  // The cluster's groups point into the catalog: it lives as long as main.
  het::plan::DeviceCatalog catalog;
  std::unique_ptr<het::plan::Cluster> cluster;
  if (!clusterFile.empty()) {
    try {
      catalog = het::plan::DeviceCatalog::loadDirectory(het::plan::DeviceCatalog::defaultDirectory());
      cluster = std::make_unique<het::plan::Cluster>(het::plan::loadCluster(clusterFile, catalog));
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
    if (nranks == 0) nranks = cluster->deviceCount();
  }

  hetrun::LaunchSpec spec;
  spec.jobName = jobName;
  spec.image = image;
  spec.nranks = nranks;
  spec.port = port;
  spec.maxRestarts = maxRestarts;
  spec.collectiveTimeoutMs = timeoutMs;
  spec.argv = prog;
  spec.cluster = cluster.get();
  spec.priorityClass = priorityClass;
  spec.elastic = elastic;
  spec.clusterFile = clusterFile;
  spec.lossGraceS = lossGraceS;
  if (metricsPort > 0)
    spec.metricsPort = metricsPort;
  if (!emitK8s.empty() || printLaunchers) {
    if (prog.empty()) {
      std::fprintf(stderr, "het-run: no program given\n");
      return 2;
    }
    if (!emitK8s.empty()) {
      // Kubernetes object names: the job a DNS label (its pods are
      // <job>-<task>-<i>), the priority class a DNS subdomain.
      static const std::regex label("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
          subdomain("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
      if (!std::regex_match(jobName, label) || jobName.size() > 52) {
        std::fprintf(stderr, "het-run: --job-name '%s' is not a Kubernetes name (lower-case "
                             "letters, digits and '-', at most 52 characters)\n",
                     jobName.c_str());
        return 2;
      }
      if (!priorityClass.empty() &&
          (!std::regex_match(priorityClass, subdomain) || priorityClass.size() > 253)) {
        std::fprintf(stderr, "het-run: --priority-class '%s' is not a Kubernetes name\n",
                     priorityClass.c_str());
        return 2;
      }
      if (!cluster) {
        std::fprintf(stderr, "het-run: --emit-k8s needs --cluster (one task per device group)\n");
        return 2;
      }
      std::string manifest;
      try {
        manifest = hetrun::volcanoJobYaml(spec);
      } catch (const std::exception &e) {
        std::fprintf(stderr, "het-run: --emit-k8s: %s\n", e.what());
        return 2;
      }
      std::ofstream out(emitK8s);
      out << manifest;
      if (!out.good()) {
        std::fprintf(stderr, "het-run: cannot write %s\n", emitK8s.c_str());
        return 2;
      }
      std::fprintf(stderr, "het-run: wrote %s\n", emitK8s.c_str());
    }
    if (printLaunchers) {
      if (nranks == 0) {
        std::fprintf(stderr, "het-run: --print-launchers needs -n or --cluster\n");
        return 2;
      }
      std::fputs(hetrun::launcherLines(spec).c_str(), stdout);
    }
    return 0;
  }

  if (prog.empty()) {
    std::fprintf(stderr, "het-run: no program given (usage: het-run -n N ./program [args])\n");
    return 2;
  }
  if (nranks == 0) {
    std::fprintf(stderr, "het-run: give the number of ranks with -n or a --cluster\n");
    return 2;
  }
  hetrun::JobOptions opts;
  opts.nranks = nranks;
  opts.worldSize = worldSize;
  opts.rankOffset = rankOffset;
  opts.argv = prog;
  opts.collectiveTimeoutMs = timeoutMs;
  opts.failWaitMs = failWaitMs;
  opts.graceMs = graceMs;
  opts.jobTimeoutS = jobTimeoutS;
  if (rankOffset > 0 && worldSize == 0) {
    std::fprintf(stderr, "het-run: --rank-offset needs --world-size\n");
    return 2;
  }
  if (worldSize > 0 && rankOffset + nranks > worldSize) {
    std::fprintf(stderr, "het-run: ranks %d..%d do not fit in --world-size %d\n", rankOffset,
                 rankOffset + nranks - 1, worldSize);
    return 2;
  }
  if (!root.empty()) {
    const char *tok = std::getenv("HETCCL_TOKEN");
    if (!tok || !*tok) {
      std::fprintf(stderr, "het-run: --root joins an existing job: set HETCCL_TOKEN to its token\n");
      return 2;
    }
    opts.root = root;
    opts.token = tok;
  }
  std::unique_ptr<hetrun::ElasticPlans> plans;
  hetrun::LostDevices lostDevices;
  int failures = 0, replans = 0;
  int64_t lostAtStep = -1; // the last step reported before devices were lost
  if (lossGraceS > 0 && !(elastic && (metricsPort >= 0 || !coordinateAt.empty()))) {
    std::fprintf(stderr, "het-run: --loss-grace-s needs --elastic and --metrics-port (lost "
                         "devices are re-admitted through it: het-run --admit) or --coordinate "
                         "(agents that join re-admit theirs)\n");
    return 2;
  }
  if (elastic) {
    if (!cluster) {
      std::fprintf(stderr, "het-run: --elastic needs --cluster (it re-plans for the devices "
                           "left in it)\n");
      return 2;
    }
    try {
      // Absolute: het-compile runs in the directory the model was first
      // compiled in, which need not be this one.
      std::string program = prog.front();
      if (!program.empty() && program[0] != '/') {
        char cwd[4096];
        if (::getcwd(cwd, sizeof cwd))
          program = std::string(cwd) + "/" + program;
      }
      plans = std::make_unique<hetrun::ElasticPlans>(hetrun::readBuildRecord(prog.front()),
                                                     clusterFile, program);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
  } else if (spares > 0) {
    std::fprintf(stderr, "het-run: --spares needs --elastic\n");
    return 2;
  }
  if (elastic && (!root.empty() || worldSize > 0 || rankOffset > 0)) {
    std::fprintf(stderr, "het-run: --elastic re-plans a job this het-run runs alone; it cannot "
                         "be one of several het-runs (--root, --world-size, --rank-offset)\n");
    return 2;
  }
  auto deviceEnv = [&] {
    opts.rankEnv.clear();
    for (const auto &g : cluster->groups)
      for (int i = 0; i < g.count(); ++i)
        opts.rankEnv.push_back({{"HET_DEVICE_GROUP", g.name}, {"HET_DEVICE_KIND", g.kind}});
  };
  if (cluster) {
    if (cluster->deviceCount() != nranks) {
      std::fprintf(stderr, "het-run: -n %d but cluster '%s' has %d devices\n", nranks,
                   cluster->name.c_str(), cluster->deviceCount());
      return 2;
    }
    deviceEnv();
  }

  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<hetrun::JobMetrics> metrics;
  // --elastic reads the ranks' steps too, to say how many a loss cost.
  if (metricsPort >= 0 || !metricsLog.empty() || elastic) {
    try {
      metrics = std::make_unique<hetrun::JobMetrics>(metricsLog, rankOffset);
      // Before serving: /admit must never answer as if the job were not elastic.
      if (elastic && coordinateAt.empty())
        metrics->acceptAdmissions(&lostDevices);
      else if (elastic)
        metrics->refuseAdmissions("this job's devices are re-admitted by their agents joining "
                                  "(het-run --join), not by --admit");
      if (metricsPort >= 0) {
        int port = metrics->serve(metricsAddress, metricsPort);
        std::fprintf(stderr, "het-run: metrics at http://%s:%d/metrics, status at /status\n",
                     metricsAddress.c_str(), port);
      }
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
    if (coordinateAt.empty()) // agents give their ranks their own
      opts.env.push_back(metrics->rankEnvironment());
  }
  std::unique_ptr<hetrun::Coordinator> coordinator;
  if (!coordinateAt.empty()) {
    try {
      auto [host, port] = hetrun::hostAndPort(coordinateAt, "--coordinate", /*portZero=*/true);
      coordinator = std::make_unique<hetrun::Coordinator>(plans->originalSpec(), *cluster, host,
                                                          port, metrics.get());
      std::fprintf(stderr, "het-run: coordinating at %s:%d; waiting up to %g s for an agent on "
                           "every node (het-run --join %s:%d --group G)\n",
                   host.c_str(), coordinator->port(), joinTimeoutS, host.c_str(), coordinator->port());
      std::fflush(stderr);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
  }
  // The job's end: agents hear it too.
  auto finish = [&](int status, const std::string &why) {
    if (coordinator)
      coordinator->finish(status, why);
    return status;
  };
  if (elastic && !coordinator) {
    // Re-admitted devices: the running ranks stop after their next
    // checkpoint, and the job is planned again with them.
    opts.env.push_back({"HET_STOP_AT_CHECKPOINT", "1"});
    opts.stopAtCheckpoint = [&] { return lostDevices.anyAdmitted(); };
  } else if (coordinator) {
    opts.env.push_back({"HET_STOP_AT_CHECKPOINT", "1"});
    opts.stopAtCheckpoint = [&] { return coordinator->newcomers(); };
  }
  // Restarts the job on the cluster without `still` lost devices: the
  // executable built for those devices before, or a new plan.
  auto switchPlan = [&](const std::map<std::string, int> &still, const std::string &why) {
    ++replans;
    metrics->countReplan();
    hetrun::ElasticPlans::Choice c;
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
    deviceEnv();
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
    if (int sig = hetrun::stopSignal())
      return finish(128 + sig, "interrupted");
    if (!all) {
      std::map<std::string, int> missing = coordinator->missing();
      if (cluster->deviceCount() == [&] {
            int n = 0;
            for (const auto &[g, k] : missing)
              n += k;
            return n;
          }()) {
        std::fprintf(stderr, "het-run: no agent joined within %g s\n", joinTimeoutS);
        return finish(1, "no agent joined");
      }
      char wait[32];
      std::snprintf(wait, sizeof wait, "%g", joinTimeoutS);
      if (!switchPlan(missing, std::string("agents missing after ") + wait + " s (" +
                                   coordinator->agentsText() + ")"))
        return finish(1, "planning failed");
    }
  }
  for (int attempt = 0;; ++attempt) {
    opts.attempt = attempt;
    hetrun::JobResult r;
    if (metrics)
      metrics->beginAttempt(attempt, nranks,
                            cluster ? het::plan::rankGroups(*cluster) : std::vector<std::string>{});
    try {
      // A fresh token and port per attempt.
      r = coordinator ? coordinator->run(*cluster, opts) : hetrun::runJob(opts);
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
      return finish(0, "the job is done");
    }
    for (size_t k = 0; k < r.fates.size(); ++k)
      std::fprintf(stderr, "het-run: rank %d %s after %.3f s\n", opts.rankOffset + int(k),
                   r.fates[k].describe().c_str(), r.fates[k].seconds);
    std::string who = r.failedRank >= 0 ? "rank " + std::to_string(r.failedRank) + " " : "";
    if (int sig = hetrun::stopSignal()) {
      std::fprintf(stderr, "het-run: interrupted: %s%s\n", who.c_str(), r.cause.c_str());
      return finish(128 + sig, "interrupted");
    }
    std::vector<int> lost = elastic ? hetrun::lostRanks(r) : std::vector<int>{};
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
               !hetrun::stopSignal())
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (int sig = hetrun::stopSignal()) {
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
