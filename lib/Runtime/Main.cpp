//===- Main.cpp - hetrt_main: the training driver of compiled models -------===//
//
// Owns one buffer per step argument and result, fills the arguments the way
// `het-eval --random-inputs SEED` does (same generators, same order), then
// runs the step N times, copying each result into the argument of the same
// name -- the loop het-eval --steps runs, so both print the same trace.
// With --data, each step's data/label arguments come from the dataset.
//
//===----------------------------------------------------------------------===//

#include "het-c/hetrt.h"

#include "Arguments.h"
#include "Generate.h"
#include "LearningRate.h"
#include "SampleShards.h"
#include "TokenData.h"
#include "MemoryReport.h"
#include "MoEReport.h"
#include "Gpu/GpuDriver.h"
#include "ModelInfo.h"
#include "RandomState.h"

#include "het/Eval/Npy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include <malloc.h>
#include <omp.h>

using namespace het::rt;
namespace eval = het::eval;

namespace {

struct Options {
  long long steps = 100;
  long long batch = -1;
  LearningRateSchedule lr;
  long long seed = 0;
  std::string data, evalData, save, load, logSamples;
  bool loadAll = false; // --inputs: --load, and every argument but state given
  int threads = 0;
  long long printEvery = 1;
  long long evalEvery = 0, evalWindows = 0; // token files: validation every N steps
  std::string prompt;                       // --generate: token ids
  long long generate = 0, topK = 0;         // tokens to decode; 0: greedy
  double temperature = 1.0;
  bool profileMemory = false; // --profile-memory
};

const char *usage =
    "usage: %s [options]\n"
    "Trains the compiled model (het-compile) and reports loss, throughput and accuracy.\n"
    "  --steps N        training steps (default 100)\n"
    "  --batch B        batch size; must equal the batch compiled into the model\n"
    HETRT_LEARNING_RATE_USAGE
    "  --seed S         seed of parameter init and synthetic data, as het-eval\n"
    "                   --random-inputs S (default 0); also shuffles --data\n"
    "  --data F.npz     training set: arrays x [N, ...] and y [N] (labels);\n"
    "                   without it the model trains on one synthetic batch\n"
    "  --data F.bin     a token file (uint16 ids, or as F.bin.json says; het.data\n"
    "                   prepare writes one) for a language model: each sample a\n"
    "                   window of its tokens and the next ones, in a seeded order\n"
    "                   that visits every window once per epoch\n"
    "  --data DIR       sample shards x-K.npy [n, ...] (float32) and y-K.npy [n]\n"
    "                   (labels), memory-mapped (het.data shard writes them): each\n"
    "                   sample in a seeded order visiting all once per epoch\n"
    "  --log-samples F  append the sample number and window start (item, with\n"
    "                   shards) of each sample trained on to F\n"
    "  --eval F.npz     test set (x, y): prints the accuracy after training\n"
    "  --eval F.bin     a language model's validation tokens: prints the loss and\n"
    "                   perplexity over its windows in order after training\n"
    "  --eval-every N   with --eval F.bin: also every N steps\n"
    "  --eval-windows K with --eval F.bin: its first K windows (default: all)\n"
    "  --generate N     a language model: after training, decode N tokens after\n"
    "                   --prompt from the parameters (greedy; --top-k K samples)\n"
    "                   and print them\n"
    "  --prompt IDS     the token ids to continue (464,3290,318)\n"
    "  --top-k K        with --generate: draw each token from the K likeliest, by\n"
    "                   --temperature (default 1) and --seed\n"
    "  --load F.npz     arguments by name (parameters, state, constants, data)\n"
    "  --inputs F.npz   --load, and an error naming any argument the file lacks\n"
    "                   but state (its start values): het-eval's --inputs\n"
    "  --save F.npz     parameters and state (optimizer, BatchNorm running\n"
    "                   statistics) after training\n"
    "  --threads T      threads of the oneDNN kernels (default: all cores)\n"
    "  --print-every K  print the loss every K steps (default 1)\n"
    "  --profile-memory after training, where the peak of buffers comes from:\n"
    "                   parameters, optimizer state (each twice: the step writes\n"
    "                   the next values beside the current ones), batch data,\n"
    "                   and the step's temporaries (its activations among them)\n"
    "Deterministic for a fixed seed and thread count. A progress bar replaces\n"
    "the per-step lines when stdout is a terminal.\n";

bool parseOptions(int argc, char **argv, Options &o) {
  OptionReader options(argc, argv, usage);
  while (options.next({"--profile-memory"})) {
    const std::string &arg = options.name(), &value = options.value();
    if (arg == "--profile-memory")
      o.profileMemory = true;
    else if (arg == "--steps")
      o.steps = options.integer(0);
    else if (arg == "--batch")
      o.batch = options.integer(1);
    else if (arg == "--seed")
      o.seed = options.integer(0);
    else if (arg == "--threads")
      o.threads = static_cast<int>(options.integer(1, 4096));
    else if (arg == "--print-every")
      o.printEvery = options.integer(1);
    else if (readLearningRateOption(options, o.lr))
      continue;
    else if (arg == "--data")
      o.data = value;
    else if (arg == "--eval")
      o.evalData = value;
    else if (arg == "--log-samples")
      o.logSamples = value;
    else if (arg == "--eval-every")
      o.evalEvery = options.integer(1);
    else if (arg == "--eval-windows")
      o.evalWindows = options.integer(1);
    else if (arg == "--generate")
      o.generate = options.integer(1);
    else if (arg == "--prompt")
      o.prompt = value;
    else if (arg == "--top-k")
      o.topK = options.integer(1);
    else if (arg == "--temperature")
      o.temperature = options.positive();
    else if (arg == "--load")
      o.load = value;
    else if (arg == "--inputs") {
      o.load = value;
      o.loadAll = true;
    }
    else if (arg == "--save")
      o.save = value;
    else
      die("unknown option '" + arg + "' (see --help)");
  }
  return true;
}

/// The progress bar on a terminal: steps, loss, throughput (tokens/s for a
/// language model on a token file, else samples/s) and the time left.
void progress(long long step, long long steps, double loss, double seconds, double samples,
              long long tokensPerSample) {
  const int width = 30;
  int filled = steps ? static_cast<int>(width * step / steps) : width;
  double rate = seconds > 0 ? samples / seconds : 0;
  double left = step > 0 ? seconds / double(step) * double(steps - step) : 0;
  std::printf("\r[%.*s%*s] %lld/%lld loss %.5f %.0f %s/s %.0fs, %.0fs left  ", filled,
              "##############################", width - filled, "", step, steps, loss,
              tokensPerSample > 0 ? rate * double(tokensPerSample) : rate,
              tokensPerSample > 0 ? "tokens" : "samples", seconds, left);
  std::fflush(stdout);
}

} // namespace

extern "C" int hetrt_main(int argc, char **argv, const char *modelInfo, hetrt_entry_fn step,
                          hetrt_entry_fn predict) {
  Options o;
  parseOptions(argc, argv, o);
  // Each step allocates and frees the same large buffers; glibc would mmap
  // and unmap them every time, and the page faults and zeroing cost as much
  // as a convolution. Keeping freed memory in the heap lets steps reuse it.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ModelInfo info;
  std::string error;
  if (!parseModelInfo(modelInfo, info, error))
    die(error);
  // A GPU executable starts its driver before the first buffer, so that
  // every buffer is managed memory the kernels can use.
  std::string gpuDevice = gpu::startForExecutable();
  std::string schedule = useLearningRate(o.lr, o.steps);
  if (o.threads > 0)
    omp_set_num_threads(o.threads);
  int threads = omp_get_max_threads();

  // Arguments, initialized as het-eval --random-inputs would.
  std::vector<Buffer> inputs, outputs;
  std::map<std::string, unsigned> inputIndex;
  int dataInput = -1, labelInput = -1;
  for (unsigned i = 0; i < info.inputs.size(); ++i) {
    const TensorInfo &t = info.inputs[i];
    MemoryUseScope use(memoryUseOf(t.role));
    inputs.emplace_back(bytesOf(t));
    initialize(t, i, o.seed, inputs.back());
    inputIndex[t.name] = i;
    if (t.role == "data")
      dataInput = dataInput == -1 ? static_cast<int>(i) : -2;
    if (t.role == "label")
      labelInput = labelInput == -1 ? static_cast<int>(i) : -2;
  }
  int lossOutput = -1;
  std::vector<int> feedback; // output -> input of the same name, or -1
  for (unsigned j = 0; j < info.outputs.size(); ++j) {
    auto it = inputIndex.find(info.outputs[j].name);
    // An output that becomes the next step's argument is its next value.
    MemoryUseScope use(it == inputIndex.end() ? MemoryUse::StepResults
                                              : memoryUseOf(info.inputs[it->second].role));
    outputs.emplace_back(bytesOf(info.outputs[j]));
    feedback.push_back(it == inputIndex.end() ? -1 : static_cast<int>(it->second));
    if (info.outputs[j].name == "loss")
      lossOutput = static_cast<int>(j);
  }
  if (lossOutput < 0)
    die("the compiled step has no result named 'loss'");

  // The batch size: the leading size of the first data (else label, else
  // [batch, ...] token id) argument; a 1-D index input is a position
  // table, not a batch.
  int64_t batch = -1;
  for (const char *role : {"data", "label", "index"})
    for (const TensorInfo &t : info.inputs)
      if (batch < 0 && t.role == role && !(t.role == std::string("index") && t.shape.size() < 2))
        batch = t.shape.empty() ? 1 : t.shape[0];
  if (o.batch > 0 && batch > 0 && o.batch != batch)
    die("--batch " + std::to_string(o.batch) + " does not match the model's batch size " +
        std::to_string(batch) + " (it is compiled into the model's shapes; regenerate the "
        "model for another batch size)");
  if (batch < 0)
    batch = 1;

  std::set<std::string> given;
  if (!o.load.empty()) {
    std::map<std::string, eval::HostArray> arrays = loadArguments(o.load, info);
    for (auto &[name, array] : arrays) {
      copyLoaded(array, info.inputs[inputIndex.at(name)], inputs[inputIndex.at(name)]);
      given.insert(name);
    }
    if (o.loadAll) {
      std::string missing;
      for (const TensorInfo &t : info.inputs)
        if (t.role != "state" && !given.count(t.name))
          missing += (missing.empty() ? "" : ", ") + t.name;
      if (!missing.empty())
        die(o.load + ": the step needs arguments the file lacks: " + missing);
    }
  }
  requireConstants(info, given, o.load);

  // A token file: windows of a language model's text.
  std::unique_ptr<TokenFile> tokenFile;
  std::unique_ptr<TokenStream> tokens;
  TokenArguments tokenArgs;
  if (!o.data.empty() && isTokenFile(o.data)) {
    tokenArgs = tokenArguments(info, "--data " + o.data + " is a token file");
    tokenFile = std::make_unique<TokenFile>(o.data, tokenArgs.window, tokenArgs.vocab);
    tokens = std::make_unique<TokenStream>(*tokenFile, tokenArgs.window, o.seed);
    if (tokenArgs.positions >= 0)
      tokenArgs.fillPositions(inputs[tokenArgs.positions].i());
    if (!o.logSamples.empty())
      tokens->logSamples(o.logSamples, 0);
    std::printf("data %s: %llu tokens, %llu windows of %lld per epoch\n", o.data.c_str(),
                static_cast<unsigned long long>(tokenFile->tokens()),
                static_cast<unsigned long long>(tokens->windowsPerEpoch()),
                static_cast<long long>(tokenArgs.window));
    o.data.clear(); // not an .npz dataset
  } else if (!o.logSamples.empty() && !isSampleShards(o.data)) {
    die("--log-samples logs the samples of a token file (--data F.bin) or of sample shards "
        "(--data DIR)");
  }
  // Validation tokens: the loss over their windows, in order, by the
  // predict function's logits.
  std::unique_ptr<TokenFile> evalTokens;
  if (!o.evalData.empty() && isTokenFile(o.evalData)) {
    if (tokenArgs.input < 0)
      tokenArgs = tokenArguments(info, "--eval " + o.evalData + " is a token file");
    evalTokens = std::make_unique<TokenFile>(o.evalData, tokenArgs.window, tokenArgs.vocab);
    if (!predict)
      die("--eval " + o.evalData + " needs the model's logits (no predict function was built: "
          "the loss is not a cross-entropy)");
    o.evalData.clear();
  } else if (o.evalEvery > 0 || o.evalWindows > 0) {
    die("--eval-every and --eval-windows are for a language model's validation tokens (--eval F.bin)");
  }
  // Decoding after training: checked before the first step.
  std::vector<int64_t> prompt;
  if (o.generate > 0) {
    if (!predict)
      die("--generate needs the model's logits (no predict function was built: the loss is "
          "not a cross-entropy)");
    if (tokenArgs.input < 0)
      tokenArgs = tokenArguments(info, "--generate decodes tokens");
    if (info.logits.count() != batch * tokenArgs.window * info.logits.shape.back())
      die("--generate: the predict function's logits are " + shapeText(info.logits.shape) +
          ", not [" + std::to_string(batch) + ", " + std::to_string(tokenArgs.window) +
          ", vocabulary]");
    if (o.prompt.empty())
      die("--generate needs --prompt: the token ids to continue");
    prompt = parsePrompt(o.prompt, std::min<int64_t>(tokenArgs.vocab, info.logits.shape.back()));
  } else if (!o.prompt.empty() || o.topK > 0) {
    die("--prompt and --top-k are for --generate");
  }

  Dataset train, test;
  bool haveData = !o.data.empty(), haveEval = !o.evalData.empty();
  if ((haveData || haveEval) && (dataInput < 0 || labelInput < 0))
    die("--data/--eval need a model with exactly one float data argument and one label "
        "argument");
  // Sample shards (a folder): mapped, read sample by sample.
  std::unique_ptr<SampleShards> shards;
  if (haveData && isSampleShards(o.data)) {
    shards = openSampleShards(o.data, info, dataInput, labelInput, batch,
                              "one batch of " + std::to_string(batch), o.seed, o.logSamples, 0);
    std::printf("data %s: %lld samples in %zu shards\n", o.data.c_str(),
                static_cast<long long>(shards->samples()), shards->shards());
  } else if (haveData) {
    train = loadDataset(o.data, info.inputs[dataInput], info.inputs[labelInput], batch);
  }
  if (haveEval)
    test = loadDataset(o.evalData, info.inputs[dataInput], info.inputs[labelInput], batch);
  if (haveEval && !predict)
    die("--eval needs a model whose loss is a cross-entropy (no predict function was built)");
  if (haveData && !shards && train.size < batch)
    die(o.data + " holds " + std::to_string(train.size) + " samples, fewer than one batch of " +
        std::to_string(batch));

  std::vector<void *> in(inputs.size()), out(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    in[i] = inputs[i].memory.get();
  for (size_t j = 0; j < outputs.size(); ++j)
    out[j] = outputs[j].memory.get();

  // Epoch-wise shuffled batches of the training set.
  std::unique_ptr<SampleSource> stream;
  if (shards)
    stream = std::move(shards);
  else if (haveData)
    stream = std::make_unique<BatchStream>(train, batch, o.seed);

  // The predict function's arguments: the step's buffers of those names
  // (as they are now), one of which must be input `needed`.
  auto predictArguments = [&](int needed, const char *what) {
    std::vector<void *> pin;
    bool reads = false;
    for (const std::string &name : info.predictInputs) {
      auto it = inputIndex.find(name);
      if (it == inputIndex.end())
        die("the predict function's argument '" + name + "' is no argument of the step");
      pin.push_back(inputs[it->second].memory.get());
      reads |= static_cast<int>(it->second) == needed;
    }
    if (!reads)
      die(std::string("the predict function does not read ") + what);
    return pin;
  };

  // The validation loss: the mean next-token cross-entropy over the
  // validation file's windows in order (a last short batch padded with
  // its last window, which is not counted), from the predict function's
  // logits and the current parameters.
  auto validate = [&](long long afterSteps) {
    std::vector<void *> pin = predictArguments(tokenArgs.input, "the token ids");
    const int64_t T = tokenArgs.window, V = info.logits.shape.back();
    if (info.logits.count() != batch * T * V)
      die("the predict function's logits are " + shapeText(info.logits.shape) + ", not [" +
          std::to_string(batch) + ", " + std::to_string(T) + ", vocabulary]");
    int64_t windows = static_cast<int64_t>((evalTokens->tokens() - 1) / T);
    if (o.evalWindows > 0)
      windows = std::min<int64_t>(windows, o.evalWindows);
    // The ids buffer is the step's; keep its training batch.
    Buffer saved(inputs[tokenArgs.input].bytes);
    std::memcpy(saved.memory.get(), inputs[tokenArgs.input].memory.get(), saved.bytes);
    Buffer logits(bytesOf(info.logits));
    std::vector<void *> pout{logits.memory.get()};
    int64_t *ids = inputs[tokenArgs.input].i();
    double total = 0;
    for (int64_t first = 0; first < windows; first += batch) {
      for (int64_t b = 0; b < batch; ++b) {
        uint64_t start = static_cast<uint64_t>(std::min(first + b, windows - 1) * T);
        for (int64_t t = 0; t < T; ++t)
          ids[b * T + t] = evalTokens->token(start + t);
      }
      predict(pin.data(), pout.data());
      for (int64_t b = 0; b < batch && first + b < windows; ++b)
        for (int64_t t = 0; t < T; ++t) {
          const float *row = logits.f() + (b * T + t) * V;
          double peak = *std::max_element(row, row + V), sum = 0;
          for (int64_t v = 0; v < V; ++v)
            sum += std::exp(double(row[v]) - peak);
          int64_t next = evalTokens->token(static_cast<uint64_t>((first + b) * T + t + 1));
          total += peak + std::log(sum) - row[next];
        }
    }
    std::memcpy(inputs[tokenArgs.input].memory.get(), saved.memory.get(), saved.bytes);
    double loss = total / double(windows * T);
    std::printf("eval after step %lld: loss %.6f perplexity %.3f (%lld windows of %lld tokens)\n",
                afterSteps, loss, std::exp(loss), static_cast<long long>(windows),
                static_cast<long long>(T));
    std::fflush(stdout);
  };

  bool tty = isatty(fileno(stdout));
  std::printf("model %s: batch %lld, %zu arguments, threads %d\n", info.stepName.c_str(),
              static_cast<long long>(batch), info.inputs.size(), threads);
  if (!gpuDevice.empty())
    std::printf("%s\n", gpuDevice.c_str());
  if (!schedule.empty())
    std::printf("%s\n", schedule.c_str());
  std::fflush(stdout);
  auto start = std::chrono::steady_clock::now(), warmStart = start;
  double loss = NAN;
  for (long long s = 0; s < o.steps; ++s) {
    if (haveData) {
      stream->setStep(s);
      stream->fillSamples(s * batch, batch, inputs[dataInput].f(), inputs[labelInput].i());
      stream->prefetch((s + 1) * batch, batch);
    }
    if (tokens) {
      tokens->setStep(s);
      tokens->fillSamples(s * batch, batch, inputs[tokenArgs.input].i(),
                          inputs[tokenArgs.targets].i());
      tokens->prefetch((s + 1) * batch, batch);
    }
    hetrtRandomContext() = {s, 0}; // het.dropout's counters: the whole batch is here
    setLearningRateStep(s);
    if (o.profileMemory)
      setMemoryPhase("step " + std::to_string(s));
    {
      MemoryUseScope temporaries(MemoryUse::Temporaries);
      step(in.data(), out.data());
    }
    loss = outputs[lossOutput].f()[0];
    if (s == 0)
      warmStart = std::chrono::steady_clock::now(); // kernels are set up now
    // Results become the next step's arguments: swap the buffers (same
    // sizes; the step never aliases an input with an output) instead of
    // copying them.
    for (size_t j = 0; j < outputs.size(); ++j)
      if (feedback[j] >= 0) {
        std::swap(inputs[feedback[j]], outputs[j]);
        in[feedback[j]] = inputs[feedback[j]].memory.get();
        out[j] = outputs[j].memory.get();
      }
    if (!std::isfinite(loss)) {
      if (tty)
        std::printf("\n");
      std::printf("step %lld loss %.9g\n", s, loss);
      die("the loss is not finite at step " + std::to_string(s) + " (lower --lr?)");
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty)
      progress(s + 1, o.steps, loss, seconds, double((s + 1) * batch),
               tokens ? static_cast<long long>(tokenArgs.window) : 0);
    else if (s % o.printEvery == 0 || s + 1 == o.steps)
      std::printf("step %lld loss %.9g\n", s, loss);
    if (evalTokens && o.evalEvery > 0 && (s + 1) % o.evalEvery == 0 && s + 1 < o.steps)
      validate(s + 1);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (tty && o.steps > 0)
    std::printf("\n");
  // Throughput leaves out the first step, which creates the oneDNN
  // primitives and starts the thread pool.
  double timed = std::chrono::duration<double>(std::chrono::steady_clock::now() - warmStart).count();
  long long timedSteps = o.steps > 1 ? o.steps - 1 : o.steps;
  if (o.steps <= 1)
    timed = seconds;
  if (o.steps > 0)
    std::printf("throughput %.1f samples/s (%lld steps of batch %lld in %.3f s after the "
                "first; %.3f s in all)\n",
                static_cast<double>(timedSteps) * batch / timed, timedSteps,
                static_cast<long long>(batch), timed, seconds);
  if (o.steps > 0)
    std::printf("memory: %s\n", memoryReport().c_str());
  if (std::string moe = moeReport(); o.steps > 0 && !moe.empty())
    std::printf("moe: %s\n", moe.c_str());
  if (o.steps > 0 && o.profileMemory)
    std::printf("memory: %s\n", memoryProfile().c_str());
  if (evalTokens)
    validate(o.steps);

  if (haveEval) {
    std::vector<void *> pin = predictArguments(dataInput, "the data argument");
    Buffer logits(bytesOf(info.logits));
    std::vector<void *> pout{logits.memory.get()};
    int64_t classes = info.logits.shape.back(), correct = 0;
    float *x = inputs[dataInput].f();
    for (int64_t first = 0; first < test.size; first += batch) {
      for (int64_t b = 0; b < batch; ++b) {
        int64_t sample = std::min(first + b, test.size - 1); // pad the last batch
        std::memcpy(x + b * test.sampleSize, &test.x[sample * test.sampleSize],
                    test.sampleSize * sizeof(float));
      }
      predict(pin.data(), pout.data());
      for (int64_t b = 0; b < batch && first + b < test.size; ++b) {
        const float *row = logits.f() + b * classes;
        int64_t best = std::max_element(row, row + classes) - row;
        correct += best == test.y[first + b];
      }
    }
    std::printf("eval accuracy %.4f (%lld/%lld)\n", static_cast<double>(correct) / test.size,
                static_cast<long long>(correct), static_cast<long long>(test.size));
  }

  if (o.generate > 0) {
    std::vector<void *> pin = predictArguments(tokenArgs.input, "the token ids");
    if (tokenArgs.positions >= 0)
      tokenArgs.fillPositions(inputs[tokenArgs.positions].i());
    Buffer logits(bytesOf(info.logits));
    std::vector<void *> pout{logits.memory.get()};
    Decoding decoding;
    decoding.tokens = o.generate;
    decoding.topK = o.topK;
    decoding.temperature = o.temperature;
    decoding.seed = static_cast<uint64_t>(o.seed);
    // The ids buffer is the step's: decoding uses it after the last step.
    std::vector<int64_t> sequence =
        het::rt::generate(prompt, decoding, batch, tokenArgs.window, info.logits.shape.back(),
                          inputs[tokenArgs.input].i(), logits.f(),
                          [&] { predict(pin.data(), pout.data()); });
    std::string text;
    for (size_t i = prompt.size(); i < sequence.size(); ++i)
      text += (text.empty() ? "" : " ") + std::to_string(sequence[i]);
    std::printf("generated %lld tokens (%s%s) after %zu of the prompt: %s\n",
                static_cast<long long>(o.generate),
                o.topK > 0 ? "top-" : "greedy", o.topK > 0 ? std::to_string(o.topK).c_str() : "",
                prompt.size(), text.c_str());
    std::fflush(stdout);
  }

  if (!o.save.empty()) {
    eval::NamedArrays arrays;
    for (size_t i = 0; i < info.inputs.size(); ++i) {
      const TensorInfo &t = info.inputs[i];
      if (t.role != "param" && t.role != "state")
        continue;
      eval::HostArray array;
      array.shape = t.shape;
      if (t.isInteger()) {
        array.kind = eval::ElementKind::I64;
        array.integers.assign(inputs[i].i(), inputs[i].i() + t.count());
      } else {
        array.kind = eval::ElementKind::F32;
        array.floats.assign(inputs[i].f(), inputs[i].f() + t.count());
      }
      arrays.emplace_back(t.name, std::move(array));
    }
    if (llvm::Error e = eval::writeNpz(o.save, arrays))
      die(llvm::toString(std::move(e)));
    std::printf("saved %zu arrays to %s\n", arrays.size(), o.save.c_str());
  }
  return 0;
}
