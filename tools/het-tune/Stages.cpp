//===- Stages.cpp - het-tune stages MODEL --cluster C --db F ---------------===//
//
// For each local device kind of the cluster (cpu.onednn, cpu.mlir) and each
// micro-batch size, het-compile builds the model as a pipeline of one layer
// per stage on that kind (a plan written here, one replica per stage), and
// the executable's --profile-stages times every stage's forward, backward
// and update: the very code, kernels and tilings a pipeline rank of that
// kind runs, on a core of its own (`--concurrent N` runs N copies at once
// and averages them, to see contention; the planner instead bounds ranks
// that outnumber the host's cores by their work over the cores). Each
// layer's times become one stage record: the median of `--rounds` rounds
// that time every kind and size in turn. Then messages between the
// cluster's ranks on this host (MessageSweep.h): to a rank that waits, and
// back to back.
//
//===----------------------------------------------------------------------===//

#include "Stages.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/Error.h"
#include "het/Plan/ModelFromIR.h"
#include "het/Plan/Plan.h"
#include "het/Tune/MessageSweep.h"
#include "het/Tune/TuningDatabase.h"
#include "het/Tune/StageProfiles.h"

#include <nlohmann/json.hpp>

#include "llvm/Config/llvm-config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sys/wait.h>
#include <unistd.h>

using namespace het::tune;
using namespace het::plan;
namespace fs = std::filesystem;

void addStagesCommand(CLI::App &app, StagesCommand &s) {
  s.command = app.add_subcommand(
      "stages", "time each layer of a model on each local device kind of a cluster at several "
                "micro-batch sizes, as pipeline ranks run it; het-plan --tuning-db and "
                "het-compile --plan auto --tuning-db then use the measured times");
  s.command->add_option("model", s.model, "the model (.mlir), as given to het-compile")
      ->required()
      ->check(CLI::ExistingFile);
  s.command->add_option("--cluster", s.cluster,
                        "cluster spec whose local kinds (cpu.onednn, cpu.mlir) are measured")
      ->required()
      ->check(CLI::ExistingFile);
  s.command->add_option("--db", s.db, "the tuning database (created if missing)")->required();
  s.command
      ->add_option("--load", s.load,
                   "parameters and constants for the profile runs (the .npz het.export writes "
                   "beside an imported model, whose constants it needs)")
      ->check(CLI::ExistingFile);
  s.command
      ->add_option("--micro-batch", s.microBatches,
                   "samples per call to measure at (default: the model's batch halved down "
                   "to 1, and 2 and 4 times it); the planner interpolates between them")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  s.command
      ->add_option("--concurrent", s.concurrent,
                   "processes timing at once (default 1: each layer on a core of its own; "
                   "the planner bounds ranks that outnumber the cores by their work)")
      ->check(CLI::Range(1, 256));
  s.command->add_option("--repeats", s.repeats, "timed calls per stage (default 20)")
      ->check(CLI::Range(1, 10000));
  s.command
      ->add_option("--rounds", s.rounds,
                   "rounds that time every kind and micro-batch size in turn; each layer's "
                   "record is the median of its rounds (default 3)")
      ->check(CLI::Range(1, 100));
}

namespace {

/// Runs `argv`, its output to `log`; returns its exit status (or 128 +
/// signal).
pid_t start(const std::vector<std::string> &argv, const std::string &log) {
  std::fflush(stdout); // or the child would write our buffered lines again
  pid_t pid = fork();
  if (pid == 0) {
    std::FILE *out = std::freopen(log.c_str(), "w", stdout);
    if (out)
      dup2(fileno(stdout), 2);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::perror(args[0]);
    _exit(127);
  }
  return pid;
}

int finish(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0)
    return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

int runStages(const StagesCommand &s, int waitMs) {
  DeviceCatalog catalog = DeviceCatalog::loadDirectory(DeviceCatalog::defaultDirectory());
  Cluster cluster;
  ModelDesc model;
  try {
    cluster = loadCluster(s.cluster, catalog);
    model = loadModelMlir(s.model);
  } catch (const PlanError &e) {
    std::cerr << "het-tune stages: error: " << e.what() << "\n";
    return 1;
  }
  const int layers = int(model.layers.size());
  if (layers == 0 || model.batch <= 0) {
    std::cerr << "het-tune stages: error: " << s.model
              << " has no layers (het.layer) or no batch dimension\n";
    return 1;
  }
  // The kinds to measure, and the devices that will share this host.
  std::vector<const DeviceSpec *> kinds;
  int localDevices = 0;
  for (const DeviceGroup &g : cluster.groups) {
    if (g.spec->localLibrary().empty())
      continue;
    localDevices += g.count();
    if (std::find(kinds.begin(), kinds.end(), g.spec) == kinds.end())
      kinds.push_back(g.spec);
  }
  if (kinds.empty()) {
    std::cerr << "het-tune stages: error: " << s.cluster
              << " has no device kind this host runs (cpu.onednn, cpu.mlir, cpu.reference)\n";
    return 1;
  }
  int concurrent = s.concurrent;
  // By default the model's batch halved down to 1, and 2 and 4 times it:
  // plans give a replica up to the global batch over the fewest replicas
  // (het-compile --plan auto: the batch times the micro-batches times the
  // smallest group), and a size beyond the records runs code the records
  // did not time -- generated contractions are tuned per shape (het-tune
  // kernels), so the main job's MLP ran 1.7x slower at 64 samples on
  // cpu.mlir than its tuned 32-sample profile said.
  std::vector<int> sizes = s.microBatches;
  if (sizes.empty()) {
    for (long b = model.batch; b >= 1; b /= 2)
      sizes.insert(sizes.begin(), int(b));
    for (long b : {2 * model.batch, 4 * model.batch})
      sizes.push_back(int(b));
  }

  std::unique_ptr<TuningDatabase> db;
  try {
    db = TuningDatabase::open(s.db, TuningDatabase::Mode::ReadWrite, waitMs);
  } catch (const DatabaseError &e) {
    std::cerr << "het-tune stages: error: " << e.what() << "\n";
    return 1;
  }
  std::string compile = (fs::canonical("/proc/self/exe").parent_path() / "het-compile").string();
  char pattern[] = "/tmp/het-tune-stages-XXXXXX";
  if (!mkdtemp(pattern)) {
    std::cerr << "het-tune stages: error: cannot create a temporary directory\n";
    return 1;
  }
  const fs::path work = pattern;
  std::printf("het-tune stages: %s (%s), %d layers; %zu kind%s x %zu micro-batch size%s, "
              "%d process%s at once (%d local device%s in %s)\n",
              s.model.c_str(), stageModelKey(model).c_str(), layers, kinds.size(),
              kinds.size() == 1 ? "" : "s", sizes.size(), sizes.size() == 1 ? "" : "s",
              concurrent, concurrent == 1 ? "" : "es", localDevices,
              localDevices == 1 ? "" : "s", s.cluster.c_str());
  int status = 0;
  size_t written = 0;
  // Every (kind, micro-batch) executable first; then `rounds` rounds that
  // time each in turn, kinds interleaved size by size, and each layer's
  // record is the median of its rounds. A shared 2-core VM drifts by tens
  // of percent over the seconds one kind's sizes take: timed one kind
  // after the other, the drift lands on one kind and decides plans (the
  // main job's MLP was priced faster on cpu.mlir than on cpu.onednn, and
  // ran 1.7-2.0x slower there).
  //
  // Each (kind, size) is also built as one stage of every layer: a stage
  // call costs more than its layers (the runtime's work around the stage
  // function: arguments, buffers, the values received and sent, the
  // samples), and a pipeline of one layer per stage pays that once per
  // layer. With T_l each layer's stage and T the whole model's, the call's
  // cost is c = (sum T_l - T) / (L - 1); each layer's record is T_l - c
  // and carries c (call_*_s), which the planner charges once per stage and
  // micro-batch. Left in the layers, a stage of several layers paid it once
  // per layer and a second micro-batch of one layer not again (on this VM
  // c is 3-9 us per call at 32 samples for the MLP).
  struct Profiled {
    const DeviceSpec *kind;
    std::string library, tag;
    int mbs;
    bool whole; // one stage of every layer
    fs::path exe;
    std::vector<std::vector<LayerTime>> rounds; // per round, per stage
  };
  std::vector<Profiled> profiled;
  for (int mbs : sizes)
    for (const DeviceSpec *kind : kinds)
      for (bool whole : {false, true}) {
        if (whole && layers < 2)
          continue;
        const std::string library = kind->localLibrary();
        // One group of `layers` devices of this kind on this host.
        nlohmann::json clusterSpec = {
            {"name", "het-tune-stages"},
            {"nodes",
             {{{"name", "localhost"},
               {"count", 1},
               {"devices", {{{"group", "g"}, {"kind", kind->name}, {"count", layers}}}},
               {"links",
                {{{"between", {"g", "g"}},
                  {"type", "shared-memory"},
                  {"bandwidth_gbps", 80.0},
                  {"latency_us", 1.0}}}}}}}};
        fs::path clusterFile = work / (kind->name + ".cluster.json");
        std::ofstream(clusterFile) << clusterSpec.dump(2) << "\n";
        Cluster one = loadCluster(clusterFile.string(), catalog);
        Plan plan;
        plan.globalBatch = mbs;
        plan.microBatches = 1;
        if (whole)
          plan.stages.push_back(StagePlan(0, 1, 1, 0, layers));
        else
          for (int l = 0; l < layers; ++l)
            plan.stages.push_back(StagePlan(0, 1, 1, l, l + 1));
        std::string tag = kind->name + ".mb" + std::to_string(mbs) + (whole ? ".whole" : "");
        fs::path planFile = work / (tag + ".plan.json"), exe = work / tag;
        std::ofstream(planFile) << planToJson(plan, one, model).dump(2) << "\n";
        std::vector<std::string> compileArgs = {compile,     s.model, "--cluster",
                                                clusterFile.string(), "--plan", planFile.string(),
                                                "--tuning-db", s.db,  "-o", exe.string()};
        std::string compileLog = (work / (tag + ".compile.log")).string();
        if (int rc = finish(start(compileArgs, compileLog)); rc != 0) {
          std::cerr << "het-tune stages: error: het-compile failed for " << kind->name
                    << " at micro-batch " << mbs << " (exit " << rc << "):\n"
                    << slurp(compileLog);
          status = 1;
          continue;
        }
        profiled.push_back({kind, library, tag, mbs, whole, exe, {}});
      }
  for (int round = 0; round < s.rounds; ++round)
    for (Profiled &p : profiled) {
      if (p.rounds.size() != size_t(round))
        continue; // an earlier round failed
      std::vector<pid_t> pids;
      std::string tag = p.tag + ".r" + std::to_string(round);
      for (int c = 0; c < concurrent; ++c) {
        std::vector<std::string> command = {
            p.exe.string(), "--threads", "1", "--profile-repeats", std::to_string(s.repeats),
            "--profile-stages", (work / (tag + "." + std::to_string(c) + ".json")).string()};
        if (!s.load.empty()) {
          command.push_back("--load");
          command.push_back(s.load);
        }
        pids.push_back(start(command, (work / (tag + "." + std::to_string(c) + ".log")).string()));
      }
      const int stages = p.whole ? 1 : layers;
      std::vector<LayerTime> sum(stages);
      bool failed = false;
      for (int c = 0; c < concurrent; ++c) {
        std::string base = (work / (tag + "." + std::to_string(c))).string();
        if (int rc = finish(pids[c]); rc != 0) {
          if (!failed)
            std::cerr << "het-tune stages: error: the profile run of " << p.kind->name
                      << " at micro-batch " << p.mbs << " failed (exit " << rc << "):\n"
                      << slurp(base + ".log");
          failed = true;
          continue;
        }
        nlohmann::json profile = nlohmann::json::parse(slurp(base + ".json"), nullptr, false);
        if (profile.is_discarded() || profile.value("format", "") != "het-stage-profile" ||
            profile["stages"].size() != size_t(stages)) {
          std::cerr << "het-tune stages: error: unreadable profile " << base << ".json\n";
          failed = true;
          continue;
        }
        for (const auto &stage : profile["stages"]) {
          int l = stage["layers"][0].get<int>();
          sum[l].fwd += stage["fwd_ms"].get<double>() * 1e-3 / concurrent;
          sum[l].bwd += stage["bwd_ms"].get<double>() * 1e-3 / concurrent;
          sum[l].update += stage["update_ms"].get<double>() * 1e-3 / concurrent;
        }
      }
      if (failed) {
        status = 1;
        continue;
      }
      p.rounds.push_back(std::move(sum));
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  auto medianOf = [&](const Profiled &p, int stage) {
    std::vector<double> fwd, bwd, update;
    for (const std::vector<LayerTime> &r : p.rounds) {
      fwd.push_back(r[size_t(stage)].fwd);
      bwd.push_back(r[size_t(stage)].bwd);
      update.push_back(r[size_t(stage)].update);
    }
    return LayerTime{median(fwd), median(bwd), median(update)};
  };
  // Printed and written kind by kind, as before.
  for (const DeviceSpec *kind : kinds)
    for (const Profiled &p : profiled) {
      if (p.kind != kind || p.whole || p.rounds.size() != size_t(s.rounds))
        continue;
      std::vector<LayerTime> times;
      for (int l = 0; l < layers; ++l)
        times.push_back(medianOf(p, l));
      // The stage call's cost, from the whole model's stage at this size.
      LayerTime call;
      for (const Profiled &w : profiled)
        if (w.kind == kind && w.whole && w.mbs == p.mbs && w.rounds.size() == size_t(s.rounds)) {
          LayerTime all = medianOf(w, 0);
          auto share = [&](double LayerTime::*part) {
            double sum = 0, least = INFINITY;
            for (const LayerTime &t : times) {
              sum += t.*part;
              least = std::min(least, t.*part);
            }
            // Never more than the cheapest layer's stage: its net time
            // stays >= 0.
            return std::clamp((sum - all.*part) / (layers - 1), 0.0, least);
          };
          call = {share(&LayerTime::fwd), share(&LayerTime::bwd), share(&LayerTime::update)};
        }
      std::printf("%s (%s kernels), micro-batch %d:", kind->name.c_str(), p.library.c_str(),
                  p.mbs);
      for (int l = 0; l < layers; ++l) {
        LayerMeasurement m;
        m.layer = l;
        m.microBatch = p.mbs;
        m.concurrent = concurrent;
        m.time.fwd = times[l].fwd - call.fwd;
        m.time.bwd = times[l].bwd - call.bwd;
        m.time.update = times[l].update - call.update;
        m.details = nlohmann::json{{"library", p.library},
                                   {"repeats", s.repeats},
                                   {"rounds", s.rounds},
                                   {"statistic", "median over the rounds (kinds timed in turn) "
                                                 "of the mean of the repeats, averaged over "
                                                 "the concurrent processes, less the stage "
                                                 "call's cost"},
                                   {"call_fwd_s", call.fwd},
                                   {"call_bwd_s", call.bwd},
                                   {"call_update_s", call.update},
                                   {"threads", 1}}
                        .dump();
        try {
          db->put(stageRecord(model, kind->name, "LLVM " LLVM_VERSION_STRING, m));
          ++written;
        } catch (const DatabaseError &e) {
          std::cerr << "het-tune stages: error: " << e.what() << "\n";
          return 1;
        }
        std::printf(" L%d %.3f+%.3f ms", l, 1e3 * m.time.fwd, 1e3 * m.time.bwd);
      }
      std::printf("; a stage call %.3f+%.3f ms\n", 1e3 * call.fwd, 1e3 * call.bwd);
      std::fflush(stdout);
    }
  // Messages with the job's ranks on this host: to a rank that waited
  // (asleep) for the sender's work, and right after one another.
  if (localDevices >= 2) {
    for (const char *after : {"compute", "message"}) {
      MessageSweepOptions m;
      m.ranks = localDevices;
      m.sizes = {64, 1024, 16384, 262144, 4194304};
      m.computeSeconds = std::string(after) == "compute" ? 0.001 : 0;
      try {
        std::vector<double> means = sweepMessages(m);
        std::printf("messages %s, %d ranks on this host:",
                    m.computeSeconds > 0 ? "to a waiting rank" : "back to back", localDevices);
        for (size_t k = 0; k < m.sizes.size(); ++k) {
          Record r;
          r.kind = "collective";
          r.workload = messageWorkloadPrefix(localDevices, after) + std::to_string(m.sizes[k]);
          r.device = "cpu";
          r.host = hostIdentity();
          r.hetVersion = hetVersion();
          r.choice = "shm";
          r.seconds = means[k];
          r.details = nlohmann::json{{"messages", m.messages},
                                     {"sender_compute_s", m.computeSeconds},
                                     {"statistic", "mean latency, send call to arrival"}}
                          .dump();
          r.measuredAt = utcNow();
          db->put(r);
          ++written;
          std::printf(" %llu B %.1f us%s", (unsigned long long)m.sizes[k], 1e6 * means[k],
                      k + 1 == m.sizes.size() ? "\n" : ";");
        }
      } catch (const std::exception &e) {
        std::cerr << "het-tune stages: error: " << e.what() << "\n";
        status = 1;
      }
    }
  }
  std::error_code ignored;
  if (status == 0)
    fs::remove_all(work, ignored);
  else
    std::cerr << "het-tune stages: the failed runs' files are kept in " << work.string() << "\n";
  std::printf("het-tune stages: %zu records written to %s\n", written, s.db.c_str());
  return status;
}
