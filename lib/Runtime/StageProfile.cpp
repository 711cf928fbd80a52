//===- StageProfile.cpp - time each stage of a pipeline executable alone --===//
//
// `--profile-stages F.json`: instead of training, this one process takes
// the place of one replica of every (stage, replica group) of the pipeline
// in turn and times its forward (with taking its samples), backward and
// update functions: the code the ranks run, with the kernels and the share
// of the micro-batch the plan gave that group. Received activations and
// gradients get synthetic values (PipelineComm's profiling mode) and sends
// are dropped, so a stage's time is its computation alone; het-tune stages
// compiles a plan of one layer per stage and turns the means into
// per-layer profiles the planner prefers to its roofline.
//
// Output: {"format": "het-stage-profile", "repeats": N, "stages": [{"stage",
// "layers": [b, e], "group", "library", "samples", "fwd_ms", "bwd_ms",
// "update_ms", "repeats"}]}, times the means of the repeats (at least N, and
// at least a quarter second of them) after two warm-ups.
//
//===----------------------------------------------------------------------===//

#include "Gpu/GpuDriver.h"
#include "PipelineComm.h"
#include "PipelineRank.h"
#include "RandomState.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <utility>

namespace het::rt {

namespace {

/// The mean, not the median: a host shared with other ranks preempts a
/// call now and then, and the mean charges that share of the time as the
/// ranks of a job on this host pay it.
double mean(const std::vector<double> &v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

} // namespace

int PipelineRank::profileStages() {
  PipelineComm &comm = pipelineComm();
  comm.info = &info_;
  std::string error;
  if (!PipelineLayout::build(info_, /*byGroup=*/false, comm.layout, error))
    die(error);
  comm.profiling = true;
  std::FILE *out = std::fopen(o_.profileOut.c_str(), "w");
  if (!out)
    die("--profile-stages: cannot write " + o_.profileOut);
  std::fprintf(out, "{\"format\": \"het-stage-profile\", \"repeats\": %lld, \"stages\": [",
               o_.profileRepeats);
  std::set<std::pair<int, int>> done; // (stage, replica group)
  bool first = true;
  // CPU kinds first: once a GPU driver is started every buffer is managed
  // memory, which would skew the CPU timings. One process runs one GPU, so
  // GPU groups of another architecture than the first are not profiled.
  std::vector<RankPlace> places;
  for (int gpuPass = 0; gpuPass < 2; ++gpuPass)
    for (int r = 0; r < comm.layout.ranks(); ++r) {
      const RankPlace place = comm.layout.place(r);
      if (place.idle())
        continue;
      const std::string &library =
          info_.stages[place.stage].replicaGroups[place.replicaGroup].library;
      if (gpu::runsOnGpu(library) == (gpuPass == 1))
        places.push_back(place);
    }
  std::string profiledGpu;
  for (const RankPlace &place : places) {
    if (place.tp != 0 || !done.insert({place.stage, place.replicaGroup}).second)
      continue;
    const ReplicaGroupInfo &kinds = info_.stages[place.stage].replicaGroups[place.replicaGroup];
    if (gpu::runsOnGpu(kinds.library)) {
      std::string target = kinds.library + " " + kinds.arch;
      if (!profiledGpu.empty() && target != profiledGpu) {
        std::fprintf(stderr,
                     "--profile-stages: stage %s on %s (%s) is not profiled: this process "
                     "runs %s kernels\n",
                     info_.stages[place.stage].name.c_str(), kinds.group.c_str(), target.c_str(),
                     profiledGpu.c_str());
        continue;
      }
      profiledGpu = target;
    }
    if (comm.layout.tensorParallel(place.stage) > 1)
      die("--profile-stages: stage " + info_.stages[place.stage].name +
          " is tensor parallel; profiles time whole devices (tensor_parallel 1) only");
    comm.place = place;
    // A fresh rank at this place: its own parameters, state and samples.
    persistent_.clear();
    persistentInfo_.clear();
    microBatch_.clear();
    gradients_.clear();
    stepIndex_.clear();
    batchInputs_.clear();
    dataInput_ = labelInput_ = -1;
    takePlace(place);
    gpu::startForStage(kinds.library, kinds.arch);
    setUp();
    std::vector<double> forward, backward, update;
    auto timed = [&](const StageFunction &f, Env *batch, bool accumulate) {
      auto t0 = std::chrono::steady_clock::now();
      call(f, batch, accumulate);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    // At least the repeats asked, and at least a quarter second of them: a
    // host shared with other ranks hands out its cores in slices of
    // milliseconds, and a mean over a few slices would be luck.
    auto start = std::chrono::steady_clock::now();
    auto enough = [&](long long k) {
      return k >= o_.profileRepeats + 2 &&
             std::chrono::steady_clock::now() - start > std::chrono::milliseconds(250);
    };
    for (long long k = 0; !enough(k); ++k) {
      // Taking the micro-batch's samples (data on the first stage, labels
      // on the last; seeded synthetic ones cost as much as a small layer)
      // counts as part of the forward.
      auto t0 = std::chrono::steady_clock::now();
      fillBatch(k, 0);
      double fill = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      lossSum_ = 0;
      gradients_.clear();
      hetrtRandomContext() = {k, firstSample_};
      double f = fill + timed(variant_->forward, &microBatch_[0], true);
      double b = timed(variant_->backward, &microBatch_[0], true);
      microBatch_[0].clear();
      double u = timed(variant_->update, nullptr, false);
      if (k < 2)
        continue; // warm-ups: first touches, oneDNN primitive creation
      forward.push_back(f);
      backward.push_back(b);
      update.push_back(u);
    }
    const ReplicaGroupInfo &group = stage_->replicaGroups[place.replicaGroup];
    std::fprintf(out,
                 "%s\n  {\"stage\": %d, \"layers\": [%ld, %ld], \"group\": \"%s\", "
                 "\"library\": \"%s\", \"samples\": %lld, \"fwd_ms\": %.6f, \"bwd_ms\": %.6f, "
                 "\"update_ms\": %.6f, \"repeats\": %zu}",
                 first ? "" : ",", place.stage, stage_->layerBegin, stage_->layerEnd,
                 group.group.c_str(), group.library == "default" ? "dnnl" : group.library.c_str(),
                 static_cast<long long>(share_), 1e3 * mean(forward), 1e3 * mean(backward),
                 1e3 * mean(update), forward.size());
    first = false;
    std::printf("profiled stage %s (layers [%ld, %ld)) on %s, %lld samples: forward %.3f ms, "
                "backward %.3f ms, update %.3f ms (means of %zu)\n",
                stage_->name.c_str(), stage_->layerBegin, stage_->layerEnd, group.group.c_str(),
                static_cast<long long>(share_), 1e3 * mean(forward), 1e3 * mean(backward),
                1e3 * mean(update), forward.size());
  }
  std::fprintf(out, "\n]}\n");
  if (std::fclose(out) != 0)
    die("--profile-stages: cannot write " + o_.profileOut);
  return 0;
}

} // namespace het::rt
