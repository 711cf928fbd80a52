//===- TrainDemo.cpp - a deterministic data-parallel "training" rank ------===//
//
// The program the test/run lit tests start under het-run. It needs no code
// generation but exercises everything else of a distributed job for real:
//  - hetccl env bootstrap (RANK, WORLD_SIZE, HETCCL_ROOT, HETCCL_TOKEN);
//  - every step all-reduces the ranks' gradients through hetccl (real bytes);
//  - asynchronous incremental checkpoints every few steps (one directory per
//    rank), and on start a resume from the newest checkpoint valid on every
//    rank (the ranks agree on it with a MIN all-reduce);
//  - fault injection: --kill-rank R --kill-step S|random SIGKILLs rank R at
//    step S of the first attempt (HET_RESTART=0); with --hang it SIGSTOPs
//    itself instead (alive but silent: only the collective timeout sees it);
//    with --in-all-reduce hetccl SIGKILLs it halfway through a message of
//    that step's gradient all-reduce (part of a message on the wire).
// Everything is deterministic (f32 math, hetccl reductions are bitwise
// reproducible for a fixed algorithm and rank count), so a restarted job
// must end with bit-identical parameters: the final line prints their
// SHA-256.
//
#include "het-c/hetccl.h"
#include "het-c/hetccl_fault.h"
#include "het/Checkpoint/Checkpointer.h"
#include "het/Checkpoint/Hash.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace het::ckpt;

namespace {

struct Args {
  int steps = 20, dim = 4096, ckptEvery = 3, fullEvery = 2, killRank = -1, stepMs = 0;
  std::string killStep, ckptDir;
  bool sync = false, hang = false; // hang: SIGSTOP instead of SIGKILL
  bool inAllReduce = false;         // the kill lands inside the gradient all-reduce
};

[[noreturn]] void usage(const std::string &why) {
  std::fprintf(stderr,
               "het-run-demo: %s\nusage: het-run-demo [--steps N] [--dim D] [--ckpt-dir DIR] "
               "[--ckpt-every K] [--full-every F] [--sync-ckpt] [--step-ms MS] "
               "[--kill-rank R --kill-step S|random [--hang | --in-all-reduce]]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage(k + " needs a value");
      return argv[++i];
    };
    auto num = [&]() {
      std::string v = val();
      char *end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 0 || n > (1L << 30)) usage("bad value '" + v + "' for " + k);
      return int(n);
    };
    if (k == "--steps") a.steps = num();
    else if (k == "--dim") a.dim = num();
    else if (k == "--ckpt-dir") a.ckptDir = val();
    else if (k == "--ckpt-every") a.ckptEvery = num();
    else if (k == "--full-every") a.fullEvery = num();
    else if (k == "--sync-ckpt") a.sync = true;
    else if (k == "--step-ms") a.stepMs = num();
    else if (k == "--kill-rank") a.killRank = num();
    else if (k == "--kill-step") a.killStep = val();
    else if (k == "--hang") a.hang = true;
    else if (k == "--in-all-reduce") a.inAllReduce = true;
    else usage("unknown argument '" + k + "'");
  }
  if (a.dim < 1 || a.ckptEvery < 1 || a.fullEvery < 1) usage("--dim, --ckpt-every and --full-every must be >= 1");
  if (a.hang && a.inAllReduce) usage("--hang and --in-all-reduce exclude each other");
  return a;
}

int envInt(const char *name, int dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

hetcclComm_t gComm = nullptr;
int gRank = 0;

void check(hetcclResult_t r, const char *what, int step) {
  if (r == hetcclSuccess) return;
  std::fprintf(stderr, "error: %s failed at step %d: %s: %s\n", what, step, hetcclGetErrorString(r),
               hetcclGetLastError(gComm));
  std::fflush(stderr);
  if (gComm) hetcclCommAbort(gComm);
  std::_Exit(1);
}

struct Model {
  std::vector<float> w, m, frozen, target;
  int64_t step = 0;
  explicit Model(int dim, int rank) : w(size_t(dim)), m(size_t(dim)), frozen(size_t(dim / 4 + 1)), target(size_t(dim)) {
    for (int i = 0; i < dim; ++i) {
      w[size_t(i)] = 0.5f * float(std::sin(0.37 * i));
      target[size_t(i)] = float(std::cos(0.11 * i + rank));
    }
    for (size_t i = 0; i < frozen.size(); ++i) frozen[i] = float(i % 97) * 0.01f;
  }
  Snapshot snapshot() const {
    Snapshot s;
    s.put("w", "f32", w.data(), w.size());
    s.put("momentum", "f32", m.data(), m.size());
    s.put("frozen", "f32", frozen.data(), frozen.size()); // never changes: increments skip it
    s.put("step", "i64", &step, 1);
    return s;
  }
  void restore(const Snapshot &s) {
    auto load = [&](const char *name, std::vector<float> &v) {
      const Tensor &t = s.at(name);
      if (t.dtype != "f32" || t.bytes.size() != v.size() * 4)
        throw CheckpointError(std::string("checkpoint tensor '") + name + "' does not fit this model (--dim?)");
      std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    };
    load("w", w);
    load("momentum", m);
    load("frozen", frozen);
    std::memcpy(&step, s.at("step").bytes.data(), sizeof step);
  }
};

} // namespace

int main(int argc, char **argv) {
  Args a = parse(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  gRank = envInt("RANK", -1);
  int world = envInt("WORLD_SIZE", -1);
  int restart = envInt("HET_RESTART", 0);
  if (gRank < 0 || world < 1) usage("RANK and WORLD_SIZE must be set (run me under het-run)");

  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  // One algorithm for every attempt: bitwise reproducible reductions.
  cfg.algo = hetcclAlgoRing;
  check(hetcclCommInitFromEnv(&gComm, &cfg), "hetcclCommInitFromEnv", 0);

  Model model(a.dim, gRank);
  std::unique_ptr<Checkpointer> ckpt;
  if (!a.ckptDir.empty()) {
    std::string dir = a.ckptDir + "/rank" + std::to_string(gRank);
    try {
      // Resume: the newest checkpoint valid on this rank, then the newest
      // step that every rank has (MIN over ranks).
      ResumeResult mine = resumeLatest(dir);
      for (const Skipped &k : mine.skipped)
        std::printf("resume: skipped checkpoint step %lld: %s\n", (long long)k.step, k.reason.c_str());
      int64_t latest = mine.found ? mine.step : -1, common = latest;
      check(hetcclAllReduce(&latest, &common, 1, hetcclInt64, hetcclMin, gComm), "resume agreement", 0);
      if (common >= 0) {
        ResumeResult r = common == latest ? std::move(mine) : resumeLatest(dir, common);
        if (common != latest)
          for (const Skipped &k : r.skipped)
            std::printf("resume: skipped checkpoint step %lld: %s\n", (long long)k.step, k.reason.c_str());
        if (!r.found || r.step != common) {
          std::fprintf(stderr, "error: checkpoint step %lld, which every rank should have, is not valid here\n",
                       (long long)common);
          return 1;
        }
        model.restore(r.snapshot);
        std::printf("resumed from step %lld (%s)\n", (long long)r.step,
                    r.full ? "full" : ("incremental on full step " + std::to_string(r.base)).c_str());
      } else {
        std::printf("starting from scratch\n");
      }
      ckpt = std::make_unique<Checkpointer>(Checkpointer::Options{dir, !a.sync, a.fullEvery});
    } catch (const std::exception &e) {
      std::fprintf(stderr, "error: checkpoint: %s\n", e.what());
      return 1;
    }
  }

  int killStep = -1;
  if (gRank == a.killRank && restart == 0 && !a.killStep.empty()) {
    if (a.killStep == "random") {
      srand(unsigned(std::chrono::steady_clock::now().time_since_epoch().count() ^ getpid()));
      // Late enough that the first checkpoint has certainly landed (a
      // restart then really resumes from one), before the last step.
      int lo = 2 * a.ckptEvery + 1, hi = a.steps - 1;
      killStep = lo <= hi ? lo + rand() % (hi - lo + 1) : std::max(1, a.steps);
    } else {
      killStep = std::atoi(a.killStep.c_str());
    }
    std::printf("will %s myself at step %d\n", a.hang ? "SIGSTOP" : "SIGKILL", killStep);
  }

  std::vector<float> grad(size_t(a.dim)), sum(size_t(a.dim));
  const float lr = 0.05f, beta = 0.9f;
  double stallMax = 0;
  for (int64_t s = model.step + 1; s <= a.steps; ++s) {
    if (s == killStep && a.inAllReduce) {
      std::printf("SIGKILL at step %lld, halfway through a message of its gradient all-reduce\n", (long long)s);
      std::fflush(stdout);
      hetcclFaultKillInNextSend(1);
    } else if (s == killStep) {
      std::printf("%s at step %lld\n", a.hang ? "SIGSTOP" : "SIGKILL", (long long)s);
      std::fflush(stdout);
      ::raise(a.hang ? SIGSTOP : SIGKILL); // a hung rank, or a dead one
    }
    float scale = 1.0f + 0.01f * float((s + gRank) % 5);
    double local = 0;
    for (size_t i = 0; i < grad.size(); ++i) {
      float d = model.w[i] - model.target[i];
      grad[i] = d * scale;
      local += 0.5 * double(d) * double(d);
    }
    check(hetcclAllReduce(grad.data(), sum.data(), grad.size(), hetcclFloat32, hetcclSum, gComm), "gradient all-reduce", int(s));
    double loss = 0;
    check(hetcclAllReduce(&local, &loss, 1, hetcclFloat64, hetcclSum, gComm), "loss all-reduce", int(s));
    for (size_t i = 0; i < grad.size(); ++i) {
      model.m[i] = beta * model.m[i] + sum[i] / float(world);
      model.w[i] -= lr * model.m[i];
    }
    model.step = s;
    if (gRank == 0) std::printf("step %lld loss %.9g\n", (long long)s, loss / (double(world) * a.dim));
    if (ckpt && s % a.ckptEvery == 0) {
      auto t0 = std::chrono::steady_clock::now();
      try {
        ckpt->save(s, model.snapshot());
      } catch (const std::exception &e) {
        std::fprintf(stderr, "error: checkpoint at step %lld: %s\n", (long long)s, e.what());
        return 1;
      }
      stallMax = std::max(stallMax, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (a.stepMs) std::this_thread::sleep_for(std::chrono::milliseconds(a.stepMs));
  }
  if (ckpt) {
    try {
      ckpt->wait();
    } catch (const std::exception &e) {
      std::fprintf(stderr, "error: checkpoint: %s\n", e.what());
      return 1;
    }
    std::printf("checkpoint stall max %.3f ms (%s)\n", stallMax * 1e3, a.sync ? "sync" : "async");
  }
  std::vector<uint8_t> bytes(model.w.size() * 4 + model.m.size() * 4);
  std::memcpy(bytes.data(), model.w.data(), model.w.size() * 4);
  std::memcpy(bytes.data() + model.w.size() * 4, model.m.data(), model.m.size() * 4);
  std::printf("final step %d params sha256 %s\n", a.steps, sha256Hex(bytes.data(), bytes.size()).c_str());
  check(hetcclCommDestroy(gComm), "hetcclCommDestroy", a.steps);
  return 0;
}
