//===- PipelineMain.cpp - hetrt_pipeline_main: one rank of a pipeline -----===//
//
// The driver of executables built by `het-compile --cluster`. Every rank
// runs the same executable; its rank (from het-run, torchrun or mpirun's
// environment) picks its stage, replica and tensor-parallel device
// (PipelineLayout), and the replica's group picks the stage code compiled
// for its share of the micro-batch and its kernel library. Per step it
//
//  1. takes its samples: step s trains on samples [s*G, (s+1)*G) of the
//     stream (G the global batch) in M micro-batches; replica r of a stage
//     holds its share of each, a contiguous range of the micro-batch, so
//     any plan sees exactly the samples one rank with the same global batch
//     would;
//  2. runs the stage's forward and backward functions in the order
//     het-pipeline-schedule recorded, keeping each micro-batch's saved
//     activations until its backward pass, summing the gradients;
//  3. divides the gradients by M and runs the update function, whose
//     all-reduce combines them over the stage's replicas (a sum: each
//     replica's loss is already weighted by its share);
//  4. (last stage) averages the loss over micro-batches, adds it up over
//     the replicas and prints it, in the format of the single-rank driver.
//
// Parameters start as a single-rank run's do: every rank initializes the
// whole step's arguments by their index and keeps the ones its stage reads
// (its part of those split over tensor-parallel devices). Checkpoints
// (lib/Checkpoint) are per rank; a restarted job resumes from the newest
// step valid on every rank.
//
//===----------------------------------------------------------------------===//

#include "het-c/hetccl_fault.h"
#include "het-c/hetrt.h"

#include "Arguments.h"
#include "CommTrace.h"
#include "Gpu/GpuDriver.h"
#include "ModelInfo.h"
#include "MemoryReport.h"
#include "MoEReport.h"
#include "PipelineComm.h"
#include "PipelineRank.h"
#include "RandomState.h"
#include "RankBinding.h"
#include "RankMetrics.h"
#include "Resharding.h"
#include "StopRequest.h"

#include "het/Checkpoint/Checkpointer.h"
#include "het/Checkpoint/Store.h"
#include "het/Eval/Npy.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <malloc.h>
#include <omp.h>

using namespace het::rt;
namespace eval = het::eval;
namespace ckpt = het::ckpt;


namespace {


const char *usage =
    "usage: %s [options]   (one rank of a pipeline; start all ranks with het-run -n N)\n"
    "Trains the compiled pipeline: each rank runs its stage's code for its device kind.\n"
    "  --steps N             training steps (default 100)\n"
    HETRT_LEARNING_RATE_USAGE
    "  --seed S              seed of parameter init, synthetic data and --data's\n"
    "                        shuffle (default 0); a single-rank run with the same\n"
    "                        seed and global batch sees the same values\n"
    "  --data F.npz          training set: arrays x [N, ...] and y [N]; without it,\n"
    "                        seeded synthetic batches\n"
    "  --data F.bin          a token file for a language model (uint16 ids, or as\n"
    "                        F.bin.json says): windows in a seeded order that every\n"
    "                        plan and split shares; each rank reads its own\n"
    "  --data DIR            sample shards x-K.npy [n, ...] (float32) and y-K.npy\n"
    "                        [n] (labels), memory-mapped (het.data shard writes\n"
    "                        them): a seeded order every plan shares; each rank\n"
    "                        reads its own samples\n"
    "  --log-samples F       append each sample (token window, or shard item) this\n"
    "                        rank trains on to F\n"
    "  --eval F.bin          a language model's validation tokens: after training\n"
    "                        (and every --eval-every N steps) the mean loss and\n"
    "                        perplexity over its windows in order, forward only,\n"
    "                        in whole global batches (--eval-windows K: of its\n"
    "                        first K windows)\n"
    "  --load F.npz          arguments by name, as a single-rank executable's --load:\n"
    "                        parameters, state, imported constants, and\n"
    "                        data inputs (one fixed global batch, each replica\n"
    "                        taking its samples); what the file lacks is seeded\n"
    "  --threads T           kernel threads per rank (default 1)\n"
    "  --print-every K       print the loss every K steps (default 1)\n"
    "  --checkpoint-dir D    asynchronous incremental checkpoints in D/rank<k>;\n"
    "                        a (re)started job resumes from the newest step valid\n"
    "                        on every rank, also when another plan wrote it (its\n"
    "                        tensors resharded to this plan's stages and parts)\n"
    "  --checkpoint-every K  checkpoint every K steps (default 0: never)\n"
    "  --full-every F        every F-th checkpoint is full (default 4)\n"
    "  --sync-checkpoint     write checkpoints on the training thread (to measure\n"
    "                        the stall the asynchronous writer avoids)\n"
    "  --save F.npz          all parameters and state (optimizer, BatchNorm running\n"
    "                        statistics) after training\n"
    "                        (gathered on rank 0)\n"
    "  --kill-rank R[,R...] --kill-step S|random [--kill-at step|transfer|all-reduce]\n"
    "                        fault injection for recovery tests: rank R (each rank\n"
    "                        listed, at the same step) SIGKILLs itself at step S\n"
    "                        of the first attempt (HET_RESTART=0):\n"
    "                        at the top of the step (default), or inside hetccl\n"
    "                        halfway through a message: the step's first\n"
    "                        activation/gradient transfer, or its gradient\n"
    "                        all-reduce\n"
    "  --profile-memory      after training, where each rank's peak of buffers comes\n"
    "                        from: parameters, gradients, optimizer state,\n"
    "                        activations, batch data, the running function's\n"
    "                        results and temporaries, and the phase it was in\n"
    "  --profile-stages F.json [--profile-repeats N]\n"
    "                        instead of training: time each stage's forward,\n"
    "                        backward and update alone in this one process (no\n"
    "                        hetccl: received tensors get synthetic values, sends\n"
    "                        are dropped), N times (default 20) and at least a\n"
    "                        quarter second after two warm-ups, and write the\n"
    "                        means to F (het-tune stages)\n"
    "Deterministic for a fixed seed, thread count and rank layout.\n";

bool parseOptions(int argc, char **argv, Options &o) {
  OptionReader options(argc, argv, usage);
  while (options.next({"--sync-checkpoint", "--profile-memory"})) {
    const std::string &arg = options.name(), &value = options.value();
    if (arg == "--sync-checkpoint")
      o.syncCheckpoint = true;
    else if (arg == "--profile-memory")
      o.profileMemory = true;
    else if (arg == "--steps")
      o.steps = options.integer(0);
    else if (arg == "--seed")
      o.seed = options.integer(0);
    else if (arg == "--threads")
      o.threads = static_cast<int>(options.integer(1, 4096));
    else if (arg == "--print-every")
      o.printEvery = options.integer(1);
    else if (arg == "--checkpoint-every")
      o.checkpointEvery = options.integer(0);
    else if (arg == "--full-every")
      o.fullEvery = options.integer(1);
    else if (arg == "--kill-rank") {
      // R or R1,R2,...: every listed rank dies at the same step.
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ',')) {
        char *end = nullptr;
        long r = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || r < 0 || r > (1 << 20))
          die("option --kill-rank expects a rank or a comma-separated list of ranks, got '" +
              value + "'");
        o.killRanks.push_back(static_cast<int>(r));
      }
    }
    else if (arg == "--kill-step")
      o.killStep = value;
    else if (arg == "--kill-at") {
      if (value != "step" && value != "transfer" && value != "all-reduce")
        die("option --kill-at expects step, transfer or all-reduce, got '" + value + "'");
      o.killAt = value;
    }
    else if (readLearningRateOption(options, o.lr))
      continue;
    else if (arg == "--profile-stages")
      o.profileOut = value;
    else if (arg == "--profile-repeats")
      o.profileRepeats = options.integer(1, 1000000);
    else if (arg == "--data")
      o.data = value;
    else if (arg == "--log-samples")
      o.logSamples = value;
    else if (arg == "--checkpoint-dir")
      o.checkpointDir = value;
    else if (arg == "--save")
      o.save = value;
    else if (arg == "--load")
      o.load = value;
    else if (arg == "--eval") {
      if (!isTokenFile(value))
        die("option --eval " + value + ": a pipeline validates a language model on a token "
            "file (F.bin); a test set (.npz) is for single-rank executables");
      o.evalData = value;
    }
    else if (arg == "--eval-every")
      o.evalEvery = options.integer(1);
    else if (arg == "--eval-windows")
      o.evalWindows = options.integer(1);
    else if (arg == "--batch" || arg == "--inputs")
      die("option " + arg + " is for single-rank executables; this one is a pipeline "
          "(het-compile --cluster)");
    else
      die("unknown option '" + arg + "' (see --help)");
  }
  return true;
}



} // namespace

namespace het::rt {

hetrt_entry_fn PipelineRank::entry(const StageFunction &f) {
  auto it = entries_.find(f.symbol);
  if (it != entries_.end())
    return it->second;
  std::string symbol = "het_entry_" + f.symbol;
  void *address = dlsym(RTLD_DEFAULT, symbol.c_str());
  if (!address)
    die("the executable does not export " + symbol + " (link it with -rdynamic, as "
        "het-compile does)");
  return entries_[f.symbol] = reinterpret_cast<hetrt_entry_fn>(address);
}

void PipelineRank::setUp() {
  // --load's arrays by name; its batched arguments hold the whole global
  // batch.
  if (!o_.load.empty())
    loaded_ = loadArguments(o_.load, info_, info_.globalBatch);
  std::set<std::string> given;
  for (auto &[name, array] : loaded_)
    given.insert(name);
  requireConstants(info_, given, o_.load);
  // Every argument of the whole step, loaded or initialized by its index as
  // a single-rank run would; this stage keeps what its functions read, and
  // of a split parameter its own part.
  std::map<std::string, const TensorInfo *> read;
  for (const StageFunction *f : {&variant_->forward, &variant_->backward, &variant_->update})
    for (const TensorInfo &t : f->inputs)
      read[t.name] = &t;
  for (unsigned i = 0; i < info_.inputs.size(); ++i) {
    const TensorInfo &t = info_.inputs[i];
    stepIndex_[t.name] = i;
    if (t.role == "data")
      dataInput_ = dataInput_ == -1 ? static_cast<int>(i) : -2;
    if (t.role == "label")
      labelInput_ = labelInput_ == -1 ? static_cast<int>(i) : -2;
    if (!read.count(t.name))
      continue;
    // A constant with one row per sample (an expanded attention mask) is
    // cut per micro-batch and replica like data; --load holds its rows.
    if (t.role == "data" || t.role == "label" || t.role == "index" ||
        (t.role == "const" && info_.isBatched(t.name))) {
      batchInputs_.push_back(t.name);
      continue;
    }
    MemoryUseScope use(memoryUseOf(t.role));
    Buffer whole(bytesOf(t));
    if (auto it = loaded_.find(t.name); it != loaded_.end())
      copyLoaded(it->second, t, whole);
    else
      initialize(t, i, o_.seed, whole);
    TensorInfo local = t;
    local.shape = read[t.name]->shape;
    if (info_.shard(t.name) || info_.isShareSharded(t.name) || info_.isExpertSharded(t.name))
      persistent_.emplace(t.name, placeState(t, whole, local));
    else if (local.shape != t.shape)
      die("internal error: stage input '" + t.name + "' is " + shapeText(local.shape) +
          ", the step's argument " + shapeText(t.shape));
    else
      persistent_.emplace(t.name, std::move(whole));
    persistentInfo_[t.name] = local;
  }
  reportShardedState();
  // Outputs of the update that are state it did not read (none so far) get
  // their shapes from the update's description.
  for (const TensorInfo &t : variant_->update.outputs)
    persistentInfo_.emplace(t.name, t);
  microBatch_.resize(info_.microBatches);
  if (!o_.data.empty() && isTokenFile(o_.data)) {
    tokenArgs_ = tokenArguments(info_, "--data " + o_.data + " is a token file");
    tokenFile_ = std::make_unique<TokenFile>(o_.data, tokenArgs_.window, tokenArgs_.vocab);
    tokens_ = std::make_unique<TokenStream>(*tokenFile_, tokenArgs_.window, o_.seed);
    if (!o_.logSamples.empty())
      tokens_->logSamples(o_.logSamples, pipelineComm().rank);
  } else if (!o_.logSamples.empty() && !isSampleShards(o_.data)) {
    die("--log-samples logs the samples of a token file (--data F.bin) or of sample shards "
        "(--data DIR)");
  } else if (!o_.data.empty() && isSampleShards(o_.data)) {
    stream_ = openSampleShards(o_.data, info_, dataInput_, labelInput_, info_.globalBatch,
                               "one global batch of " + std::to_string(info_.globalBatch),
                               o_.seed, o_.logSamples, pipelineComm().rank);
  } else if (!o_.data.empty()) {
    if (dataInput_ < 0 || labelInput_ < 0)
      die("--data needs a model with exactly one float data argument and one label argument");
    const TensorInfo &x = info_.inputs[dataInput_];
    int64_t batch = x.shape.empty() ? 1 : x.shape[0];
    train_ = loadDataset(o_.data, x, info_.inputs[labelInput_], batch);
    if (train_.size < info_.globalBatch)
      die(o_.data + " holds " + std::to_string(train_.size) +
          " samples, fewer than one global batch of " + std::to_string(info_.globalBatch));
    stream_ = std::make_unique<BatchStream>(train_, info_.globalBatch, o_.seed);
  }
  if (!o_.evalData.empty()) {
    if (!tokens_)
      tokenArgs_ = tokenArguments(info_, "--eval " + o_.evalData + " is a token file");
    evalFile_ = std::make_unique<TokenFile>(o_.evalData, tokenArgs_.window, tokenArgs_.vocab);
    int64_t windows = static_cast<int64_t>((evalFile_->tokens() - 1) / tokenArgs_.window);
    if (o_.evalWindows > 0)
      windows = std::min<int64_t>(windows, o_.evalWindows);
    evalBatches_ = windows / info_.globalBatch;
    if (evalBatches_ == 0)
      die("--eval " + o_.evalData + ": its " + std::to_string(windows) + " windows of " +
          std::to_string(tokenArgs_.window) + " tokens make no whole global batch of " +
          std::to_string(info_.globalBatch) + " (a pipeline validates whole batches)");
  } else if (o_.evalEvery > 0 || o_.evalWindows > 0) {
    die("--eval-every and --eval-windows are for a language model's validation tokens "
        "(--eval F.bin)");
  }
}

/// This replica's share of micro-batch `micro` of step `step`: its samples
/// of every batched input, and the micro-batch's values of the others.
void PipelineRank::fillBatch(int64_t step, int micro, const TokenFile *validation) {
  int64_t first = step * info_.globalBatch + micro * microBatchSamples_ + firstSample_;
  Env &env = microBatch_[micro];
  bool fromStream = false;
  bool tokenData = tokens_ || validation;
  const TensorInfo *tokenInput = nullptr, *tokenTargets = nullptr; // what this stage reads
  for (const std::string &name : batchInputs_) {
    unsigned index = stepIndex_[name];
    if (!validation && stream_ &&
        (static_cast<int>(index) == dataInput_ || static_cast<int>(index) == labelInput_)) {
      fromStream = true;
      continue;
    }
    if (tokenData && static_cast<int>(index) == tokenArgs_.input) {
      tokenInput = &info_.inputs[index];
      continue;
    }
    if (tokenData && static_cast<int>(index) == tokenArgs_.targets) {
      tokenTargets = &info_.inputs[index];
      continue;
    }
    const TensorInfo &t = info_.inputs[index];
    if (auto it = loaded_.find(name); it != loaded_.end()) {
      // One fixed global batch (as a single-rank run with --load trains on):
      // this replica's rows of this micro-batch, or the whole argument.
      TensorInfo local = t;
      int64_t offset = 0;
      if (info_.isBatched(name)) {
        local.shape[0] = share_;
        offset = (first - step * info_.globalBatch) * (t.count() / t.shape[0]);
      }
      Buffer b(bytesOf(local));
      copyLoaded(it->second, local, b, offset);
      env[name] = std::move(b);
      continue;
    }
    if (info_.isBatched(name)) {
      TensorInfo local = t;
      local.shape[0] = share_;
      Buffer b(bytesOf(local));
      initializeSamples(t, index, o_.seed, b, first, share_);
      env[name] = std::move(b);
    } else {
      // Not one row per sample (position ids): the same for the whole step,
      // whatever its micro-batches and replicas; for a token file's windows,
      // the positions in them.
      Buffer b(bytesOf(t));
      if (tokenData && static_cast<int>(index) == tokenArgs_.positions)
        tokenArgs_.fillPositions(b.i());
      else
        initialize(t, index, o_.seed, b, static_cast<uint64_t>(step) + 1);
      env[name] = std::move(b);
    }
  }
  if (tokenInput || tokenTargets) {
    // This replica's windows of the micro-batch: its ids, its next tokens,
    // or both, as its stage reads them.
    auto shareOf = [&](const TensorInfo *t) {
      TensorInfo local = *t;
      local.shape[0] = share_;
      return Buffer(bytesOf(local));
    };
    Buffer ids, next;
    if (tokenInput)
      ids = shareOf(tokenInput);
    if (tokenTargets)
      next = shareOf(tokenTargets);
    if (validation) {
      // Window g of the file, in order: tokens [gT, gT + T), next ones after.
      const int64_t T = tokenArgs_.window;
      for (int64_t r = 0; r < share_; ++r)
        for (int64_t t = 0; t < T; ++t) {
          uint64_t at = static_cast<uint64_t>((first + r) * T + t);
          if (tokenInput)
            ids.i()[r * T + t] = validation->token(at);
          if (tokenTargets)
            next.i()[r * T + t] = validation->token(at + 1);
        }
      if (tokenInput)
        env[tokenInput->name] = std::move(ids);
      if (tokenTargets)
        env[tokenTargets->name] = std::move(next);
      return;
    }
    tokens_->setStep(step);
    tokens_->fillSamples(first, share_, tokenInput ? ids.i() : nullptr,
                         tokenTargets ? next.i() : nullptr);
    if (micro == info_.microBatches - 1) // the next step's windows, read ahead
      tokens_->prefetch(first + info_.globalBatch - micro * microBatchSamples_, share_);
    if (tokenInput)
      env[tokenInput->name] = std::move(ids);
    if (tokenTargets)
      env[tokenTargets->name] = std::move(next);
  }
  if (!fromStream)
    return;
  // One range of the dataset gives both; keep what this stage reads.
  TensorInfo data = info_.inputs[dataInput_], labels = info_.inputs[labelInput_];
  data.shape[0] = share_;
  labels.shape[0] = share_;
  Buffer x(bytesOf(data)), y(bytesOf(labels));
  stream_->setStep(step);
  stream_->fillSamples(first, share_, x.f(), y.i());
  if (micro == info_.microBatches - 1) // the next step's samples, read ahead
    stream_->prefetch(first + info_.globalBatch - micro * microBatchSamples_, share_);
  for (const std::string &name : batchInputs_) {
    if (name == data.name)
      env[name] = std::move(x);
    else if (name == labels.name)
      env[name] = std::move(y);
  }
}

/// Runs `f` with inputs from the micro-batch's env, the gradient sums and
/// the persistent state; files its outputs.
void PipelineRank::call(const StageFunction &f, Env *batch, bool accumulate) {
  std::vector<void *> in, out;
  for (const TensorInfo &t : f.inputs) {
    Buffer *b = nullptr;
    if (batch && batch->count(t.name))
      b = &(*batch)[t.name];
    else if (gradients_.count(t.name))
      b = &gradients_[t.name];
    else if (persistent_.count(t.name))
      b = &persistent_[t.name];
    if (!b)
      die("internal error: no value for input '" + t.name + "' of " + f.symbol);
    if (b->bytes != bytesOf(t))
      die("internal error: input '" + t.name + "' of " + f.symbol + " has " +
          std::to_string(b->bytes) + " bytes, the function takes " + std::to_string(bytesOf(t)));
    in.push_back(b->memory.get());
  }
  std::vector<Buffer> results;
  {
    MemoryUseScope use(MemoryUse::StepResults);
    for (const TensorInfo &t : f.outputs) {
      results.emplace_back(bytesOf(t));
      out.push_back(results.back().memory.get());
    }
  }
  MemoryUseScope temporaries(MemoryUse::Temporaries);
  PipelineComm &comm = pipelineComm();
  comm.expectedReceives = f.receives;
  comm.receiveCalls = 0;
  CommSeconds commBefore = commSeconds();
  auto t0 = std::chrono::steady_clock::now();
  entry(f)(in.data(), out.data());
  kernelSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() -
                    (commSeconds().p2p - commBefore.p2p) -
                    (commSeconds().collective - commBefore.collective);
  if (!comm.receives.empty())
    die("internal error: " + f.symbol + " made fewer receive calls than its description says");
  for (size_t j = 0; j < f.outputs.size(); ++j) {
    const TensorInfo &t = f.outputs[j];
    if (t.name == "loss") {
      lossSum_ += results[j].f()[0];
    } else if (t.name.rfind("grad.", 0) == 0 && accumulate) {
      auto it = gradients_.find(t.name);
      if (it == gradients_.end()) {
        setMemoryUse(results[j].memory.get(), MemoryUse::Gradients);
        gradients_.emplace(t.name, std::move(results[j]));
      } else {
        float *sum = it->second.f();
        const float *add = results[j].f();
        for (int64_t e = 0; e < t.count(); ++e)
          sum[e] += add[e];
      }
    } else if (batch && t.name.rfind("saved.", 0) == 0) {
      setMemoryUse(results[j].memory.get(), MemoryUse::Activations);
      (*batch)[t.name] = std::move(results[j]);
    } else if (evaluating_) {
      // Validation keeps no state (a forward's running statistics).
    } else {
      // Parameters, optimizer state, a forward's running statistics.
      auto index = stepIndex_.find(t.name);
      setMemoryUse(results[j].memory.get(), index != stepIndex_.end()
                                                ? memoryUseOf(info_.inputs[index->second].role)
                                                : MemoryUse::OptimizerState);
      persistent_[t.name] = std::move(results[j]);
    }
  }
}

double PipelineRank::combineLoss(double loss) {
  PipelineComm &comm = pipelineComm();
  if (!isLastStage() || !comm.data)
    return loss;
  commTrace().collective("loss", comm.members(0), sizeof(double));
  double combined = loss;
  auto c0 = std::chrono::steady_clock::now();
  checkCcl(hetcclAllReduce(&loss, &combined, 1, hetcclFloat64,
                           info_.lossSum ? hetcclSum : hetcclAvg, comm.data),
           "combining the loss", comm.data);
  commSeconds().collective +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  return combined;
}

void PipelineRank::validate(int64_t afterSteps) {
  PipelineComm &comm = pipelineComm();
  const int64_t M = info_.microBatches;
  double trainingLoss = lossSum_, total = 0;
  evaluating_ = true;
  for (int64_t b = 0; b < evalBatches_; ++b) {
    lossSum_ = 0;
    for (int i = 0; i < M; ++i)
      fillBatch(b, i, evalFile_.get());
    for (int i = 0; i < M; ++i) {
      hetrtRandomContext() = {b, i * microBatchSamples_ + firstSample_};
      call(variant_->forward, &microBatch_[i], /*accumulate=*/false);
      comm.flush();
      microBatch_[i].clear();
    }
    total += combineLoss(lossSum_ / static_cast<double>(M));
  }
  evaluating_ = false;
  lossSum_ = trainingLoss;
  if (reports_) {
    double loss = total / static_cast<double>(evalBatches_);
    std::printf("eval after step %lld: loss %.6f perplexity %.3f (%lld windows of %lld tokens)\n",
                static_cast<long long>(afterSteps), loss, std::exp(loss),
                static_cast<long long>(evalBatches_ * info_.globalBatch),
                static_cast<long long>(tokenArgs_.window));
    std::fflush(stdout);
  }
}

/// A rank of a device no stage uses (het-run --cluster starts one per
/// device): it takes part in the job's agreements only.
int PipelineRank::idle() {
  PipelineComm &comm = pipelineComm();
  std::printf("rank %d: idle (the plan uses no device of it)\n", comm.rank);
  std::fflush(stdout);
  int64_t first = 0;
  if (!o_.checkpointDir.empty()) {
    // Propose no limit in every round the others make.
    int64_t common = agree(INT64_MAX);
    while (common >= 0) {
      int64_t next = agree(INT64_MAX);
      if (next == common)
        break;
      common = next;
    }
    first = std::max<int64_t>(0, common);
  }
  // Take part in the agreements on stopping, step by step as the others.
  bool stopped = false;
  for (int64_t s = first; s < o_.steps && !stopped; ++s)
    stopped = stopsAfter(s);
  if (!o_.save.empty() && !stopped)
    saveAll(o_.save);
  checkCcl(hetcclBarrier(comm.world), "the final barrier", comm.world);
  hetcclCommDestroy(comm.world);
  return 0;
}

void PipelineRank::takePlace(const RankPlace &place) {
  const PipelineComm &comm = pipelineComm();
  stage_ = &info_.stages[place.stage];
  variant_ = stage_->variant(stage_->replicaGroups[place.replicaGroup].variant);
  microBatchSamples_ = info_.globalBatch / info_.microBatches;
  firstSample_ = comm.layout.firstSample(place.stage, place.replica);
  share_ = comm.layout.share(place.stage, place.replica);
}

int PipelineRank::run() {
  PipelineComm &comm = pipelineComm();
  comm.info = &info_;
  // Rank layout: stage by stage; or, when het-run --cluster numbered the
  // ranks group by group (HET_DEVICE_GROUP), the cluster's group order.
  const char *deviceGroup = std::getenv("HET_DEVICE_GROUP");
  bool byGroup = deviceGroup && *deviceGroup;
  std::string error;
  if (!PipelineLayout::build(info_, byGroup, comm.layout, error))
    die(error);
  for (const ChannelInfo &c : info_.channels) {
    bool same = c.rowsPerSample != -1 ||
                comm.layout.replicas(c.from) == comm.layout.replicas(c.to);
    for (int q = 0; same && c.rowsPerSample == -1 && q < comm.layout.replicas(c.from); ++q)
      same = comm.layout.share(c.from, q) == comm.layout.share(c.to, q);
    if (!same)
      die("internal error: channel " + std::to_string(c.channel) + " from stage " +
          std::to_string(c.from) + " to " + std::to_string(c.to) +
          " joins stages of different splits but its split by sample is unknown");
  }
  int total = comm.layout.ranks();
  int worldSize = envInteger("WORLD_SIZE", -1), rank = envInteger("RANK", -1);
  if (worldSize < 0 && total == 1)
    worldSize = 1, rank = 0; // a one-rank pipeline runs without hetccl
  if (worldSize != total || rank < 0 || rank >= total) {
    std::string shape;
    for (const StageInfo &st : info_.stages)
      shape += (shape.empty() ? "" : ", ") + st.name + ": " + std::to_string(st.replicas()) +
               (st.replicas() == 1 ? " replica" : " replicas") +
               (st.tensorParallel > 1 ? " x " + std::to_string(st.tensorParallel) + " devices"
                                      : "");
    die("this pipeline needs " + std::to_string(total) + " ranks (" + shape +
        (byGroup ? "; one per device of the cluster" : "") + "); start it with het-run -n " +
        std::to_string(total) +
        (worldSize < 0 ? std::string(" (WORLD_SIZE is not set)")
                       : " (WORLD_SIZE is " + std::to_string(worldSize) + ")"));
  }
  comm.rank = rank;
  comm.worldSize = worldSize;
  comm.place = comm.layout.place(rank);
  if (std::string why = bindByPlace(comm.layout, rank, worldSize); !why.empty())
    std::fprintf(stderr, "rank %d: warning: %s\n", rank, why.c_str());
  // A GPU stage's rank starts the vendor's driver before its first buffer
  // (managed memory its kernels can use) and before joining the job: a
  // missing driver ends it with one line before its peers wait on it. Its
  // device: its place among this host's ranks on GPUs of its vendor (het-run
  // numbers a host's ranks contiguously, LOCAL_RANK from 0), not its local
  // rank, which counts the CPU stages' ranks too.
  std::string gpuDevice;
  if (!comm.place.idle()) {
    const ReplicaGroupInfo &group =
        info_.stages[comm.place.stage].replicaGroups[comm.place.replicaGroup];
    int hostFirst = std::max(0, rank - envInteger("LOCAL_RANK", 0));
    int ordinal = 0;
    for (int r = hostFirst; r < rank; ++r) {
      RankPlace other = comm.layout.place(r);
      if (!other.idle() &&
          info_.stages[other.stage].replicaGroups[other.replicaGroup].library == group.library)
        ++ordinal;
    }
    gpuDevice = gpu::startForStage(group.library, group.arch, ordinal);
  }
  const RankPlace &place = comm.place;
  if (worldSize > 1) {
    hetcclConfig_t config = HETCCL_CONFIG_INITIALIZER;
    config.algo = hetcclAlgoRing; // bitwise reproducible for a fixed rank count
    checkCcl(hetcclCommInitFromEnv(&comm.world, &config), "joining the job (hetccl)", nullptr);
    // The stage's replicas at this device, and this replica's devices.
    int maxTp = 1;
    for (const StageInfo &st : info_.stages)
      maxTp = std::max(maxTp, st.tensorParallel);
    hetcclComm_t data = nullptr, tensor = nullptr;
    checkCcl(hetcclCommSplit(comm.world,
                             place.idle() ? HETCCL_SPLIT_NOCOLOR : place.stage * maxTp + place.tp,
                             place.replica, &data, nullptr),
             "making the data-parallel communicator", comm.world);
    checkCcl(hetcclCommSplit(comm.world,
                             place.idle() ? HETCCL_SPLIT_NOCOLOR
                                          : comm.layout.rankOf(place.stage, place.replica, 0),
                             place.tp, &tensor, nullptr),
             "making the tensor-parallel communicator", comm.world);
    if (!place.idle() && comm.layout.replicas(place.stage) > 1)
      comm.data = data;
    else if (data)
      hetcclCommDestroy(data);
    if (!place.idle() && comm.layout.tensorParallel(place.stage) > 1)
      comm.tensor = tensor;
    else if (tensor)
      hetcclCommDestroy(tensor);
    // Every working rank: the job-wide decisions (loss scaling's found-inf).
    hetcclComm_t job = nullptr;
    checkCcl(hetcclCommSplit(comm.world, place.idle() ? HETCCL_SPLIT_NOCOLOR : 0, rank, &job,
                             nullptr),
             "making the job-wide communicator", comm.world);
    int working = 0;
    for (int r = 0; r < comm.layout.ranks(); ++r)
      working += comm.layout.place(r).idle() ? 0 : 1;
    if (!place.idle() && working > 1)
      comm.job = job;
    else if (job)
      hetcclCommDestroy(job);
    // Each tied group: every rank of its stages (a tied parameter's
    // gradient, summed once per step).
    for (const std::vector<int> &stages : info_.tiedGroups) {
      bool member = !place.idle() &&
                    std::find(stages.begin(), stages.end(), place.stage) != stages.end();
      hetcclComm_t tied = nullptr;
      checkCcl(hetcclCommSplit(comm.world, member ? 0 : HETCCL_SPLIT_NOCOLOR, rank, &tied, nullptr),
               "making a tied parameter's communicator", comm.world);
      comm.tied.push_back(member ? tied : nullptr);
    }
  }
  if (byGroup) {
    // The group this rank was started as: the cluster's order.
    std::string mine;
    int offset = 0;
    for (const auto &[name, devices] : info_.groups) {
      if (rank >= offset && rank < offset + devices)
        mine = name;
      offset += devices;
    }
    if (mine != deviceGroup)
      die("rank " + std::to_string(rank) + " was started as a " + deviceGroup +
          " device, but the pipeline's rank layout makes it one of " + mine);
  }
  if (place.idle())
    return idle();
  takePlace(place);
  const ReplicaGroupInfo &replicas = stage_->replicaGroups[place.replicaGroup];
  std::string tp = stage_->tensorParallel > 1 ? " device " + std::to_string(place.tp) + "/" +
                                                    std::to_string(stage_->tensorParallel)
                                              : "";
  // A stage whose replicas train in different formats keys its variants
  // by format too (library[_arch]_format): say which this rank runs.
  std::string format;
  for (std::string name : {"fp32", "bf16", "fp16"}) {
    const std::string &v = replicas.variant;
    if (v.size() > name.size() && v.compare(v.size() - name.size() - 1, std::string::npos,
                                            "_" + name) == 0)
      format = ", " + name;
  }
  std::printf("rank %d: stage %s (layers [%ld, %ld)) replica %d/%d%s on %s (%s/%s, %s kernels%s), "
              "samples [%lld, %lld) of each micro-batch of %lld\n",
              rank, stage_->name.c_str(), stage_->layerBegin, stage_->layerEnd, place.replica,
              stage_->replicas(), tp.c_str(), replicas.group.c_str(), replicas.vendor.c_str(),
              replicas.arch.c_str(),
              replicas.library == "default" ? "dnnl" : replicas.library.c_str(), format.c_str(),
              static_cast<long long>(firstSample_), static_cast<long long>(firstSample_ + share_),
              static_cast<long long>(microBatchSamples_));
  if (!gpuDevice.empty())
    std::printf("rank %d: %s\n", rank, gpuDevice.c_str());
  std::fflush(stdout);
  setUp();
  commTrace().open(rank);

  std::unique_ptr<ckpt::Checkpointer> checkpointer;
  int64_t first = 0;
  if (!o_.checkpointDir.empty()) {
    describeLayout();
    std::string dir = rankDirectory(o_.checkpointDir, rank);
    first = std::max<int64_t>(0, resume(o_.checkpointDir));
    checkpointer = std::make_unique<ckpt::Checkpointer>(
        ckpt::Checkpointer::Options{dir, !o_.syncCheckpoint, static_cast<int>(o_.fullEvery)});
  }
  int killStep = -1;
  bool victim = std::find(o_.killRanks.begin(), o_.killRanks.end(), rank) != o_.killRanks.end();
  if (victim && envInteger("HET_RESTART", 0) == 0 && !o_.killStep.empty()) {
    if (o_.killStep == "random") {
      // One draw for the whole job (the attempt's token is the same on
      // every rank), so several listed ranks die at the same step.
      const char *token = std::getenv("HETCCL_TOKEN");
      srand(token && *token ? static_cast<unsigned>(std::hash<std::string>{}(token))
                            : static_cast<unsigned>(std::chrono::steady_clock::now()
                                                        .time_since_epoch()
                                                        .count() ^
                                                    getpid()));
      // In the second half of the run, after two checkpoints were due (so
      // one has landed even if the asynchronous writer lags), before the
      // last step.
      long long lo = std::max<long long>({1, 2 * o_.checkpointEvery + 1, o_.steps / 2}),
                hi = o_.steps - 1;
      killStep = static_cast<int>(lo <= hi ? lo + rand() % (hi - lo + 1) : o_.steps);
    } else {
      killStep = std::atoi(o_.killStep.c_str());
    }
    // A kill inside hetccl needs messages of this rank to cut.
    if (o_.killAt == "all-reduce" && !comm.data)
      die("--kill-at all-reduce: rank " + std::to_string(rank) + "'s stage " + stage_->name +
          " has one replica, so no gradient all-reduce to kill it in");
    if (o_.killAt == "transfer" && info_.stages.size() < 2)
      die("--kill-at transfer: a single-stage pipeline has no transfers between stages");
    std::printf("will SIGKILL myself at step %d\n", killStep);
  }

  RankMetrics metrics;
  metrics.open({{"rank", std::to_string(rank)},
                {"group", replicas.group},
                {"kind", replicas.vendor + "." + replicas.arch},
                {"stage", stage_->name},
                {"replica", std::to_string(place.replica)},
                {"part", std::to_string(place.tp)},
                {"global_batch", std::to_string(info_.globalBatch)}});
  const StageFunction *byPhase[2] = {&variant_->forward, &variant_->backward};
  auto functionOf = [&](const std::string &entry) { return byPhase[entry[0] == 'B']; };
  int64_t M = info_.microBatches;
  bool reports = isLastStage() && place.replica == 0 && place.tp == 0;
  reports_ = reports;
  std::vector<double> stepSeconds;
  // The time of the steps after the first, split: kernels, messages,
  // collectives, and the rest (this loop's own work: batches, buffers,
  // gradient sums).
  double timedKernels = 0, timedP2p = 0, timedCollectives = 0;
  double stallMax = 0, stallSum = 0;
  long long saves = 0;
  int64_t stoppedAt = -1; // the checkpoint het-run asked the job to stop at
  for (int64_t s = first; s < o_.steps; ++s) {
    if (s == killStep && o_.killAt == "step") {
      std::printf("SIGKILL at step %lld\n", static_cast<long long>(s));
      std::fflush(stdout);
      ::raise(SIGKILL);
    }
    if (s == killStep && o_.killAt == "transfer") {
      std::printf("SIGKILL at step %lld, halfway through its first transfer\n",
                  static_cast<long long>(s));
      std::fflush(stdout);
      hetcclFaultKillInNextSend(1);
    }
    setLearningRateStep(s);
    auto t0 = std::chrono::steady_clock::now();
    CommSeconds commBefore = commSeconds();
    double kernelsBefore = kernelSeconds_;
    commTrace().step(s);
    if (o_.profileMemory)
      setMemoryPhase("step " + std::to_string(s) + ", reading the batch");
    {
      MemoryUseScope use(MemoryUse::BatchData);
      for (int i = 0; i < M; ++i)
        fillBatch(s, i);
    }
    lossSum_ = 0;
    gradients_.clear();
    for (size_t e = 0; e < stage_->order.size(); ++e) {
      const std::string &entry = stage_->order[e];
      int micro = std::atoi(entry.c_str() + 1);
      bool backward = entry[0] == 'B';
      // het.dropout draws by (step, sample of the step's batch): this
      // micro-batch's share starts at micro * samples + the replica's first.
      hetrtRandomContext() = {s, micro * microBatchSamples_ + firstSample_};
      if (o_.profileMemory)
        setMemoryPhase("step " + std::to_string(s) + ", " + (backward ? "backward" : "forward") +
                       " of micro-batch " + std::to_string(micro));
      call(*functionOf(entry), &microBatch_[micro], /*accumulate=*/true);
      if (backward)
        microBatch_[micro].clear(); // its activations and data are done
      // Queued sends leave with the next phase's receives; if it has none
      // (or this was the last), now.
      if (e + 1 == stage_->order.size() || functionOf(stage_->order[e + 1])->receives == 0)
        comm.flush();
    }
    comm.flush();
    if (M > 1)
      for (auto &[name, buffer] : gradients_) {
        float *g = buffer.f();
        size_t n = buffer.bytes / sizeof(float);
        for (size_t k = 0; k < n; ++k)
          g[k] /= static_cast<float>(M);
      }
    if (s == killStep && o_.killAt == "all-reduce") {
      std::printf("SIGKILL at step %lld, halfway through a message of its gradient all-reduce\n",
                  static_cast<long long>(s));
      std::fflush(stdout);
      hetcclFaultKillInNextSend(1);
    }
    // Loss scaling: a step whose gradients overflowed anywhere in the job
    // keeps everything as it was and backs the scale off; every rank
    // decided it together (the found-inf all-reduce) and says so.
    auto ratio = persistent_.find("amp.scale_ratio");
    float ratioBefore = ratio != persistent_.end() ? ratio->second.f()[0] : 0.0f;
    if (o_.profileMemory)
      setMemoryPhase("step " + std::to_string(s) + ", update");
    call(variant_->update, nullptr, /*accumulate=*/false);
    if (ratio != persistent_.end()) {
      float ratioAfter = persistent_.at("amp.scale_ratio").f()[0];
      if (ratioAfter < ratioBefore)
        std::printf("rank %d: step %lld skipped: inf/NaN gradients in the job, loss scale "
                    "x%g\n",
                    comm.rank, static_cast<long long>(s), double(ratioAfter / ratioBefore));
    }
    double loss = combineLoss(lossSum_ / static_cast<double>(M));
    stepSeconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (s > first) {
      timedKernels += kernelSeconds_ - kernelsBefore;
      timedP2p += commSeconds().p2p - commBefore.p2p;
      timedCollectives += commSeconds().collective - commBefore.collective;
    }
    if (reports) {
      if (!std::isfinite(loss))
        die("the loss is not finite at step " + std::to_string(s) + " (lower --lr?)");
      if (s % o_.printEvery == 0 || s + 1 == o_.steps)
        std::printf("step %lld loss %.9g\n", static_cast<long long>(s), loss);
    }
    if (evalFile_ && o_.evalEvery > 0 && (s + 1) % o_.evalEvery == 0 && s + 1 < o_.steps)
      validate(s + 1);
    double stepStall = 0;
    if (checkpointer && o_.checkpointEvery > 0 && (s + 1) % o_.checkpointEvery == 0) {
      auto c0 = std::chrono::steady_clock::now();
      try {
        checkpointer->save(s + 1, snapshot(s + 1)); // named by the steps it holds
      } catch (const std::exception &error) {
        die("checkpoint at step " + std::to_string(s) + ": " + error.what());
      }
      double stall = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      stallMax = std::max(stallMax, stall);
      stallSum += stall;
      ++saves;
      stepStall = stall;
    }
    if (metrics.on()) {
      StepMetrics m;
      m.step = s;
      m.stepSeconds = stepSeconds.back();
      m.samples = share_ * M;
      m.hasLoss = reports;
      m.loss = loss;
      m.collectiveSeconds = commSeconds().collective - commBefore.collective;
      m.p2pSeconds = commSeconds().p2p - commBefore.p2p;
      m.checkpointStallSeconds = stepStall;
      m.predictedStepSeconds = info_.predictedSeconds;
      metrics.report(m);
    }
    if (stopsAfter(s)) {
      stoppedAt = s + 1;
      break;
    }
  }
  if (evalFile_ && stoppedAt < 0 && first < o_.steps)
    validate(o_.steps);
  if (checkpointer) {
    try {
      checkpointer->wait();
    } catch (const std::exception &error) {
      die(std::string("checkpoint: ") + error.what());
    }
    if (saves)
      std::printf("checkpoint stall (%s): mean %.3f ms, max %.3f ms over %lld saves\n",
                  o_.syncCheckpoint ? "synchronous" : "asynchronous", 1e3 * stallSum / saves,
                  1e3 * stallMax, saves);
  }
  // Where each rank's time went, per step after the first (which sets up
  // kernels): "outside kernels" is what the runtime and the pipeline add.
  if (stepSeconds.size() > 1) {
    double steps = static_cast<double>(stepSeconds.size() - 1);
    double total = 0;
    for (size_t k = 1; k < stepSeconds.size(); ++k)
      total += stepSeconds[k];
    double rest = total - timedKernels - timedP2p - timedCollectives;
    std::printf("time per step %.3f ms: kernels %.3f ms, outside kernels %.3f ms (%.0f%%: "
                "messages %.3f, collectives %.3f, runtime %.3f)\n",
                1e3 * total / steps, 1e3 * timedKernels / steps,
                1e3 * (total - timedKernels) / steps, 100.0 * (total - timedKernels) / total,
                1e3 * timedP2p / steps, 1e3 * timedCollectives / steps, 1e3 * rest / steps);
  }
  // Iteration time: the median step after the first (which sets up kernels).
  if (stepSeconds.size() > 1 && reports) {
    std::vector<double> timed(stepSeconds.begin() + 1, stepSeconds.end());
    std::sort(timed.begin(), timed.end());
    double median = timed[timed.size() / 2];
    std::printf("iteration time %.3f ms (median of %zu steps), throughput %.1f samples/s\n",
                1e3 * median, timed.size(), info_.globalBatch / median);
    if (info_.predictedSeconds > 0)
      std::printf("plan predicted %.3f ms per iteration; measured/predicted %.2f\n",
                  1e3 * info_.predictedSeconds, median / info_.predictedSeconds);
    // het-run --tuning-db records the iteration time under it.
    if (!info_.planKey.empty())
      std::printf("plan key: %s\n", info_.planKey.c_str());
  }
  if (!stepSeconds.empty())
    std::printf("rank %d: memory: %s\n", comm.rank, memoryReport().c_str());
  if (std::string moe = moeReport(); !stepSeconds.empty() && !moe.empty())
    std::printf("rank %d: moe: %s\n", comm.rank, moe.c_str());
  if (!stepSeconds.empty() && o_.profileMemory)
    std::printf("rank %d: memory: %s\n", comm.rank, memoryProfile().c_str());
  if (stoppedAt >= 0)
    // The checkpoint is on disk (wait() above): het-run resumes from it.
    std::printf("stopped after the checkpoint of step %lld, as het-run asked\n",
                static_cast<long long>(stoppedAt));
  else if (!o_.save.empty())
    saveAll(o_.save);
  std::fflush(stdout);
  if (comm.world) {
    checkCcl(hetcclBarrier(comm.world), "the final barrier", comm.world);
    if (comm.data)
      hetcclCommDestroy(comm.data);
    if (comm.tensor)
      hetcclCommDestroy(comm.tensor);
    for (hetcclComm_t tied : comm.tied)
      if (tied)
        hetcclCommDestroy(tied);
    hetcclCommDestroy(comm.world);
  }
  return 0;
}

} // namespace het::rt

extern "C" int hetrt_pipeline_main(int argc, char **argv, const char *modelInfo) {
  // First: threads started later inherit the unblocked SIGUSR1.
  enableStopRequests();
  Options o;
  parseOptions(argc, argv, o);
  // Line by line: het-run streams each rank's lines as they come, and a
  // rank that is killed must not take buffered lines with it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // As in hetrt_main: keep freed buffers in the heap instead of unmapping.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ModelInfo info;
  std::string error;
  if (!parseModelInfo(modelInfo, info, error))
    die(error);
  if (info.stages.empty())
    die("the executable's model description has no pipeline (build it with het-compile "
        "--cluster)");
  std::string schedule = useLearningRate(o.lr, o.steps);
  if (!schedule.empty())
    std::printf("%s\n", schedule.c_str());
  omp_set_num_threads(o.threads);
  try {
    PipelineRank rank(info, o);
    return o.profileOut.empty() ? rank.run() : rank.profileStages();
  } catch (const std::exception &e) {
    die(e.what());
  }
}
