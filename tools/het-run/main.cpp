//===- het-run - start and supervise the ranks of a het job ---------------===//
//
//   het-run -n N [--cluster C.json] [--max-restarts K] [--timeout-ms T] ./program [args]
//
// See docs/het-run.md.
//
#include "Admissions.h"
#include "Agent.h"
#include "Attempts.h"
#include "Coordinator.h"
#include "Elastic.h"
#include "Launchers.h"
#include "Metrics.h"
#include "Supervisor.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/ClusterSurvivors.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Run/JobToken.h"

#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <regex>
#include <unistd.h>

namespace {
void onSignal(int sig) { hetrun::requestStop(sig); }

// SIGINT/SIGTERM stop the job (or the agent) cleanly; a peer gone does
// not kill het-run through SIGPIPE.
void installSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}
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
  std::string metricsAddress = "127.0.0.1", metricsLog, statusOf, tokenFile;
  bool consoleAuth = false;
  double peerTimeoutS = 30;
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
  std::string tuningDb;
  app.add_option("--tuning-db", tuningDb,
                 "when the job finishes, record its measured iteration time under the plan's "
                 "key in this tuning database (created if missing), so that het-compile "
                 "--plan auto --tuning-db ranks the plans that ran by what they measured");
  app.add_option("--timeout-ms", timeoutMs, "hetccl per-call timeout for the ranks (HETCCL_TIMEOUT_MS)")
      ->check(CLI::Range(1LL, 86400000LL));
  std::string bindTo = "core";
  app.add_option("--bind-to", bindTo,
                 "core: bind each rank to a CPU (ranks that outnumber the CPUs round robin, "
                 "consecutive ranks on different CPUs; fewer ranks get an equal block each), "
                 "as mpirun --bind-to core; none: leave them to the scheduler")
      ->capture_default_str()->check(CLI::IsMember({"core", "none"}));
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
  app.add_option("--metrics-address", metricsAddress,
                 "Address to serve metrics on (0.0.0.0: every address of this host; what "
                 "changes the job needs the job token either way)")
      ->capture_default_str();
  app.add_option("--token-file", tokenFile,
                 "The job token (authenticates --admit, --status with --console-auth, and "
                 "agents and their coordinator to each other): read from F, or, serving a job "
                 "without HETCCL_TOKEN, generated and written to F (mode 0600). HETCCL_TOKEN "
                 "takes precedence. A job that serves and has neither writes a fresh token to "
                 "a private file and prints where");
  app.add_flag("--console-auth", consoleAuth,
               "The read-only views (/metrics, /status) need the job token too (Authorization: "
               "Bearer <token>); by default they are open and only what changes the job is "
               "protected");
  app.add_option("--peer-timeout-s", peerTimeoutS,
                 "--coordinate and --join: a coordinator or agent that sends nothing this long "
                 "(they ping every quarter of it) is gone")
      ->capture_default_str()->check(CLI::Range(1.0, 86400.0));
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
    return askServer([&] {
      // The token if there is one: a server with --console-auth asks for it.
      std::string token;
      try {
        token = het::run::resolveJobToken(tokenFile, false, "het-run --status").value;
      } catch (const std::exception &) {
      }
      return hetrun::fetchStatus(statusOf, token);
    });
  if (!admitAt.empty()) {
    if (admitGroup.empty()) {
      std::fprintf(stderr, "het-run: --admit needs --group (the group whose devices are back)\n");
      return 2;
    }
    return askServer([&] {
      std::string token = het::run::resolveJobToken(tokenFile, false, "het-run --admit").value;
      return hetrun::admitDevices(admitAt, admitGroup, admitCount, token);
    });
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
    installSignalHandlers();
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
    agent.peerTimeoutS = peerTimeoutS;
    agent.consoleAuth = consoleAuth;
    try {
      agent.token = het::run::resolveJobToken(tokenFile, false, "het-run --join").value;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
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
  opts.bindToCores = bindTo == "core";
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
  if (cluster) {
    if (cluster->deviceCount() != nranks) {
      std::fprintf(stderr, "het-run: -n %d but cluster '%s' has %d devices\n", nranks,
                   cluster->name.c_str(), cluster->deviceCount());
      return 2;
    }
    opts.rankEnv = hetrun::deviceEnvironment(*cluster);
  }

  installSignalHandlers();

  // The job token, wherever this het-run serves a control plane (metrics
  // server, or agents to coordinate): HETCCL_TOKEN, --token-file, or a
  // fresh one in a private file, removed when the job ends.
  std::optional<het::run::JobToken> jobToken;
  struct RemoveAtExit {
    std::string path;
    ~RemoveAtExit() {
      if (!path.empty())
        ::unlink(path.c_str());
    }
  } generatedTokenFile;
  if (metricsPort >= 0 || !coordinateAt.empty()) {
    try {
      jobToken = het::run::resolveJobToken(tokenFile, true, coordinateAt.empty() ? "job" : "coordinator");
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
    if (jobToken->generated && tokenFile.empty())
      generatedTokenFile.path = jobToken->file;
    std::fprintf(stderr, "het-run: job token: %s%s\n", jobToken->source.c_str(),
                 jobToken->file.empty() ? ""
                                        : (" (het-run --admit/--status/--join: --token-file " +
                                           jobToken->file + ")").c_str());
  } else if (consoleAuth) {
    std::fprintf(stderr, "het-run: --console-auth protects the views of --metrics-port: give one\n");
    return 2;
  }

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
        int port = metrics->serve(metricsAddress, metricsPort, jobToken->value, consoleAuth);
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
                                                          port, metrics.get(), jobToken->value,
                                                          peerTimeoutS);
      std::fprintf(stderr, "het-run: coordinating at %s:%d; waiting up to %g s for an agent on "
                           "every node (het-run --join %s:%d --group G)\n",
                   host.c_str(), coordinator->port(), joinTimeoutS, host.c_str(), coordinator->port());
      std::fflush(stderr);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "het-run: %s\n", e.what());
      return 2;
    }
  }
  hetrun::Attempts attempts;
  attempts.opts = opts;
  attempts.maxRestarts = maxRestarts;
  attempts.spares = spares;
  attempts.lossGraceS = lossGraceS;
  attempts.joinTimeoutS = joinTimeoutS;
  attempts.catalog = &catalog;
  attempts.cluster = std::move(cluster);
  attempts.metrics = metrics.get();
  attempts.plans = plans.get();
  attempts.lostDevices = &lostDevices;
  attempts.coordinator = coordinator.get();
  attempts.tuningDb = tuningDb;
  return hetrun::runAttempts(attempts);
}
