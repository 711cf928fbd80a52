//===- CheckpointBench.cpp - async checkpoint stall vs a synchronous save -===//
//
// Not a test: prints, for the same state (default 100 MB of f32 in 4
// tensors), how long the training loop is stalled by
//   sync:  Checkpointer{async=false}.save(copy)    (copy + hash + write + fsync)
//   async: Checkpointer{async=true}.save(copy)     (copy + hand-over)
// while a "training step" keeps updating the live state between saves.
//
//   het-checkpoint-bench [MB=100] [saves=5] [steps-between-saves=10] [dir=/tmp]
//
// Between saves the loop runs several steps, as a real job checkpoints every
// few steps; if the writer has not finished by the next save, the async
// stall includes that wait (back-pressure), so the numbers stay honest.
//
#include "het/Checkpoint/Checkpointer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace het::ckpt;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct State {
  std::vector<std::vector<float>> tensors;
  explicit State(size_t bytes) : tensors(4, std::vector<float>(bytes / 16)) {
    for (size_t k = 0; k < tensors.size(); ++k)
      for (size_t i = 0; i < tensors[k].size(); ++i) tensors[k][i] = float(i % 1000) * 1e-3f + float(k);
  }
  // One "training step": touches every parameter (about as long as a copy).
  void step() {
    for (auto &t : tensors)
      for (float &x : t) x = x * 0.999f + 1e-4f;
  }
  Snapshot snapshot() const {
    Snapshot s;
    for (size_t k = 0; k < tensors.size(); ++k)
      s.put("t" + std::to_string(k), "f32", tensors[k].data(), tensors[k].size());
    return s;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Returns the per-save stall times of the loop.
std::vector<double> run(State &state, bool async, int saves, int between, const std::string &dir,
                        double *total, double *stepTime, double *copyTime) {
  std::vector<double> stalls;
  auto t0 = Clock::now();
  double steps = 0;
  {
    Checkpointer c({dir, async, 1});
    for (int i = 0; i < saves; ++i) {
      auto ts = Clock::now();
      for (int k = 0; k < between; ++k) state.step();
      steps += since(ts) / between;
      auto s0 = Clock::now();
      Snapshot snap = state.snapshot(); // the copy is part of the stall
      *copyTime += since(s0) / saves;
      c.save(i, std::move(snap));
      stalls.push_back(since(s0));
    }
    c.wait();
  }
  *total = since(t0);
  *stepTime = steps / saves;
  return stalls;
}
} // namespace

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100;
  int saves = argc > 2 ? std::atoi(argv[2]) : 5;
  int between = argc > 3 ? std::atoi(argv[3]) : 10;
  std::string base = argc > 4 ? argv[4] : "/tmp";
  if (mb == 0 || saves < 1 || between < 1) {
    std::fprintf(stderr, "usage: het-checkpoint-bench [MB>0] [saves>0] [steps-between>0] [dir]\n");
    return 2;
  }
  std::string dir = base + "/het-checkpoint-bench-" + std::to_string(::getpid());
  State state(mb << 20);
  std::printf("state: %zu MB in 4 f32 tensors, %d full saves each, %d steps between saves, dir %s\n", mb,
              saves, between, dir.c_str());
  double syncTotal, asyncTotal, syncStep, asyncStep, syncCopy = 0, asyncCopy = 0;
  std::vector<double> sync = run(state, false, saves, between, dir + "/sync", &syncTotal, &syncStep, &syncCopy);
  std::vector<double> async = run(state, true, saves, between, dir + "/async", &asyncTotal, &asyncStep, &asyncCopy);
  std::printf("training step (touches all state): %.1f ms\n", 1e3 * syncStep);
  std::printf("sync save stall:  median %8.1f ms  max %8.1f ms  (loop total %.2f s)\n",
              1e3 * median(sync), 1e3 * *std::max_element(sync.begin(), sync.end()), syncTotal);
  std::printf("async save stall: median %8.1f ms  max %8.1f ms  (loop total %.2f s, incl. final wait)\n",
              1e3 * median(async), 1e3 * *std::max_element(async.begin(), async.end()), asyncTotal);
  std::printf("of which the snapshot copy: %.1f ms (sync run), %.1f ms (async run); the rest of an\n"
              "async stall is back-pressure (the previous save still being written)\n",
              1e3 * syncCopy, 1e3 * asyncCopy);
  std::printf("stall ratio async/sync (median): %.3f\n", median(async) / median(sync));
  std::system(("rm -rf '" + dir + "'").c_str());
  return 0;
}
