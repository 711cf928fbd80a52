//===- Arguments.cpp - buffers, initializers and data of compiled steps ---===//

#include "Arguments.h"

#include "het/Eval/Npy.h"

#include "Philox.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace het::rt {

namespace eval = het::eval;

void die(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  // _Exit, not exit: other threads may still run (the asynchronous
  // checkpoint writer hashing with OpenSSL), and exit()'s destructors and
  // atexit handlers would free what they use under them (libcrypto's locks:
  // a rank that failed cleanly then died of SIGSEGV). Nothing needs running
  // at exit: the shm names are unlinked at init and checkpoints are written
  // to a temporary name and renamed, so a half-written one is never taken.
  std::_Exit(1);
}

bool OptionReader::next(std::initializer_list<const char *> flags) {
  if (++index_ >= argc_)
    return false;
  name_ = argv_[index_];
  value_.clear();
  if (name_ == "--help" || name_ == "-h") {
    std::printf(usage_, argv_[0]);
    std::exit(0);
  }
  for (const char *flag : flags)
    if (name_ == flag)
      return true;
  size_t eq = name_.find('=');
  if (name_.rfind("--", 0) == 0 && eq != std::string::npos) {
    value_ = name_.substr(eq + 1);
    name_ = name_.substr(0, eq);
  } else if (index_ + 1 < argc_ && std::string(argv_[index_ + 1]).rfind("--", 0) != 0) {
    value_ = argv_[++index_];
  } else {
    die("option " + name_ + " needs a value (see --help)");
  }
  if (value_.empty())
    die("option " + name_ + " needs a value (see --help)");
  return true;
}

long long OptionReader::integer(long long min, long long max) const {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value_.c_str(), &end, 10);
  if (value_.empty() || *end || errno == ERANGE || v < min || v > max)
    die("option " + name_ + " expects an integer " +
        (max == kNoLimit ? ">= " + std::to_string(min)
                         : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]") +
        ", got '" + value_ + "'");
  return v;
}

double OptionReader::positive() const {
  char *end = nullptr;
  double v = std::strtod(value_.c_str(), &end);
  if (value_.empty() || *end || !(v > 0) || !std::isfinite(v))
    die("option " + name_ + " expects a positive number, got '" + value_ + "'");
  return v;
}

int envInteger(const char *name, int fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (*end || errno == ERANGE || v < INT_MIN || v > INT_MAX)
    die(std::string("the environment variable ") + name + " must be an integer, got '" + text +
        "'");
  return static_cast<int>(v);
}

MemoryUse memoryUseOf(const std::string &role) {
  if (role == "param")
    return MemoryUse::Parameters;
  if (role == "state")
    return MemoryUse::OptimizerState;
  if (role == "data" || role == "label" || role == "index")
    return MemoryUse::BatchData;
  return MemoryUse::Other;
}

Buffer::Buffer(size_t n) : bytes(n) {
  memory.reset(allocateHostVisible(n));
  std::memset(memory.get(), 0, bytes);
}

size_t bytesOf(const TensorInfo &t) { return t.count() * t.elementBytes(); }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return "[" + s + "]";
}

void initialize(const TensorInfo &t, unsigned index, long long seed, Buffer &buffer,
                uint64_t stream) {
  std::mt19937_64 generator(static_cast<uint64_t>(seed) * 1000003u + index +
                            stream * 0x9E3779B97F4A7C15ull);
  int64_t n = t.count();
  if (t.init == "zeros")
    return;
  if (t.init == "ones") { // a running variance
    std::fill(buffer.f(), buffer.f() + n, 1.0f);
    return;
  }
  if (t.init == "randint") {
    std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(t.a) - 1);
    for (int64_t k = 0; k < n; ++k)
      buffer.i()[k] = pick(generator);
  } else if (t.init == "uniform") {
    std::uniform_real_distribution<double> pick(t.a, t.b);
    for (int64_t k = 0; k < n; ++k)
      buffer.f()[k] = static_cast<float>(pick(generator));
  } else {
    std::normal_distribution<double> pick(0.0, 1.0);
    for (int64_t k = 0; k < n; ++k)
      buffer.f()[k] = static_cast<float>(pick(generator));
  }
}

std::map<std::string, eval::HostArray> loadArguments(const std::string &path,
                                                      const ModelInfo &info, int64_t batchRows) {
  auto arrays = eval::readNpz(path);
  if (!arrays)
    die(llvm::toString(arrays.takeError()));
  std::map<std::string, eval::HostArray> byName;
  for (auto &[name, array] : *arrays) {
    const TensorInfo *t = nullptr;
    for (const TensorInfo &input : info.inputs)
      if (input.name == name)
        t = &input;
    if (!t) {
      std::string names;
      for (const TensorInfo &input : info.inputs)
        names += " " + input.name;
      die(path + ": '" + name + "' matches no argument of the model (arguments:" + names + ")");
    }
    std::vector<int64_t> shape = t->shape;
    bool wholeBatch = batchRows >= 0 && info.isBatched(name);
    if (wholeBatch)
      shape[0] = batchRows;
    if (array.shape != shape || array.isInteger() != t->isInteger())
      die(path + ": '" + name + "' is " + array.describe() + ", the model expects " +
          (t->isInteger() ? "i64" : "f32") + shapeText(shape) +
          (wholeBatch ? " (one row per sample of the plan's global batch)" : ""));
    byName.emplace(name, std::move(array));
  }
  return byName;
}

void requireConstants(const ModelInfo &info, const std::set<std::string> &given,
                      const std::string &loadPath) {
  std::string missing;
  for (const TensorInfo &t : info.inputs)
    if (t.role == "const" && !given.count(t.name))
      missing += (missing.empty() ? "" : ", ") + t.name;
  if (missing.empty())
    return;
  die("the model takes constants computed when it was imported from PyTorch (" + missing +
      "); " + (loadPath.empty() ? std::string("give them with --load MODEL.npz")
                                : loadPath + " lacks them") +
      " (het.export and HetProgram.save write them into the .npz beside the .mlir)");
}

void copyLoaded(const eval::HostArray &array, const TensorInfo &t, Buffer &buffer,
                int64_t first) {
  for (int64_t k = 0; k < t.count(); ++k) {
    if (t.isInteger())
      buffer.i()[k] = array.integers[first + k];
    else
      buffer.f()[k] = static_cast<float>(array.floats[first + k]);
  }
}

int64_t classesOf(const TensorInfo &labels) {
  return labels.role == "label" && labels.init == "randint" ? static_cast<int64_t>(labels.a) : 0;
}

Dataset loadDataset(const std::string &path, const TensorInfo &data, const TensorInfo &labels,
                    int64_t batch) {
  auto arrays = eval::readNpz(path);
  if (!arrays)
    die(llvm::toString(arrays.takeError()));
  const eval::HostArray *x = nullptr, *y = nullptr;
  for (auto &[name, array] : *arrays) {
    if (name == "x")
      x = &array;
    else if (name == "y")
      y = &array;
  }
  if (!x || !y)
    die(path + ": a dataset needs arrays 'x' (samples) and 'y' (labels)");
  Dataset d;
  d.size = x->shape.empty() ? 0 : x->shape[0];
  d.sampleSize = data.count() / batch;
  if (x->isInteger() || x->numElements() != d.size * d.sampleSize)
    die(path + ": x is " + x->describe() + ", but the model takes float samples of " +
        std::to_string(d.sampleSize) + " values (its input " + data.name + " is " +
        shapeText(data.shape) + ")");
  if (!y->isInteger() || y->shape.size() != 1 || y->shape[0] != d.size)
    die(path + ": y must hold one integer label per sample, got " + y->describe());
  if (labels.count() != batch)
    die("--data needs a model with one label per sample; " + labels.name + " is " +
        shapeText(labels.shape));
  if (d.size == 0)
    die(path + ": the dataset is empty");
  d.x.assign(x->floats.begin(), x->floats.end());
  d.y = y->integers;
  return d;
}

BatchStream::BatchStream(const Dataset &data, int64_t batch, long long seed)
    : data_(data), batch_(batch), perEpoch_(data.size / batch),
      shuffler_(static_cast<uint64_t>(seed)), order_(data.size) {
  std::iota(order_.begin(), order_.end(), 0);
}

void BatchStream::fillSamples(int64_t first, int64_t count, float *x, int64_t *y) {
  const int64_t epochSamples = perEpoch_ * batch_;
  for (int64_t b = 0; b < count; ++b) {
    int64_t position = first + b;
    // Each epoch shuffles the previous epoch's order once more.
    for (int64_t epoch = position / epochSamples; epoch_ < epoch; ++epoch_)
      std::shuffle(order_.begin(), order_.end(), shuffler_);
    int64_t sample = order_[position % epochSamples];
    std::memcpy(x + b * data_.sampleSize, &data_.x[sample * data_.sampleSize],
                data_.sampleSize * sizeof(float));
    y[b] = data_.y[sample];
  }
}

void initializeSamples(const TensorInfo &t, unsigned index, long long seed, Buffer &buffer,
                       int64_t first, int64_t count) {
  // Counter-based (Philox4x32-10, het's generator): value k of sample n is
  // a function of (seed, argument; n, k) with no state to set up. Seeding a
  // Mersenne Twister per sample, as before, cost 2 us a sample and was 40 %
  // of a small pipeline's step (bench/pipeline/overhead.sh).
  enum class Kind { Zeros, Integers, Uniform, Normal };
  Kind kind = t.init == "zeros"     ? Kind::Zeros
              : t.init == "randint" ? Kind::Integers
              : t.init == "uniform" ? Kind::Uniform
                                    : Kind::Normal;
  if (kind == Kind::Zeros)
    return;
  uint64_t s64 = static_cast<uint64_t>(seed);
  std::array<uint32_t, 2> key{uint32_t(s64) ^ uint32_t(s64 >> 32), 0x5D1A0000u ^ index};
  int64_t row = t.shape.empty() ? 1 : t.count() / t.shape[0];
  auto unit = [](uint32_t word) { return float(word >> 8) * (1.0f / 16777216.0f); }; // [0, 1)
  for (int64_t s = 0; s < count; ++s) {
    uint64_t sample = static_cast<uint64_t>(first + s);
    for (int64_t k = 0; k < row; k += 4) {
      eval::PhiloxWords w = eval::philox4x32(
          {uint32_t(sample), uint32_t(sample >> 32), uint32_t(uint64_t(k)), uint32_t(uint64_t(k) >> 32)},
          key);
      float values[4];
      if (kind == Kind::Normal) {
        // Box-Muller on two pairs of words; 1 - u keeps the logarithm finite.
        for (int pair = 0; pair < 2; ++pair) {
          float radius = std::sqrt(-2.0f * std::log(1.0f - unit(w[2 * pair])));
          float angle = 6.28318530718f * unit(w[2 * pair + 1]);
          values[2 * pair] = radius * std::cos(angle);
          values[2 * pair + 1] = radius * std::sin(angle);
        }
      }
      for (int64_t j = k; j < std::min(row, k + 4); ++j) {
        uint32_t word = w[j - k];
        if (kind == Kind::Integers) // [0, a): the high half of word * a
          buffer.i()[s * row + j] =
              static_cast<int64_t>((uint64_t(word) * static_cast<uint64_t>(t.a)) >> 32);
        else if (kind == Kind::Uniform)
          buffer.f()[s * row + j] = static_cast<float>(t.a + (t.b - t.a) * unit(word));
        else
          buffer.f()[s * row + j] = values[j - k];
      }
    }
  }
}

} // namespace het::rt
