//===- Arguments.h - buffers, initializers and data of compiled steps -*- C++ -*-===//
//
// What both drivers (hetrt_main for one rank, hetrt_pipeline_main for a
// pipeline) need to hold a step's arguments: aligned buffers, the seeded
// initializers het-eval --random-inputs uses, and the stream of training
// batches cut from a dataset.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_ARGUMENTS_H
#define HET_LIB_RUNTIME_ARGUMENTS_H

#include "Gpu/HostVisibleMemory.h"
#include "ModelInfo.h"

#include "het/Eval/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace het::rt {

[[noreturn]] void die(const std::string &message);

/// The integer in environment variable `name`, `fallback` if unset; an
/// error naming the variable if it holds anything else.
int envInteger(const char *name, int fallback);

/// The drivers' command lines: `--name value` or `--name=value`, `--help`
/// prints `usage` (a printf format taking the program name) and exits, and
/// malformed values are errors naming the option.
class OptionReader {
public:
  OptionReader(int argc, char **argv, const char *usage) : argc_(argc), argv_(argv), usage_(usage) {}
  /// Moves to the next option; false after the last. Options in `flags`
  /// take no value.
  bool next(std::initializer_list<const char *> flags = {});
  const std::string &name() const { return name_; }
  const std::string &value() const { return value_; }
  static constexpr long long kNoLimit = 1LL << 40;
  long long integer(long long min, long long max = kNoLimit) const;
  double positive() const;

private:
  int argc_, index_ = 0;
  char **argv_;
  const char *usage_;
  std::string name_, value_;
};

/// A 64-byte aligned, zeroed buffer for one argument or result; managed
/// memory when the executable runs its kernels on a GPU
/// (Gpu/HostVisibleMemory.h).
struct Buffer {
  std::unique_ptr<void, void (*)(void *)> memory{nullptr, &freeHostVisible};
  size_t bytes = 0;
  Buffer() = default;
  explicit Buffer(size_t n);
  float *f() const { return static_cast<float *>(memory.get()); }
  int64_t *i() const { return static_cast<int64_t *>(memory.get()); }
};

size_t bytesOf(const TensorInfo &t);
/// What an argument's buffer holds, by its role in the step (--profile-memory).
MemoryUse memoryUseOf(const std::string &role);
std::string shapeText(const std::vector<int64_t> &shape);

/// Fills argument `index` as het::eval::randomArgument does (`stream` 0);
/// other streams draw independent values of the same distribution (the
/// synthetic data of further micro-batches).
void initialize(const TensorInfo &t, unsigned index, long long seed, Buffer &buffer,
                uint64_t stream = 0);

/// Fills `count` samples (rows of the first dimension of `t`, the step's
/// argument at the model's batch) starting at sample `first` of the
/// synthetic stream of argument `index`: each sample's values depend on the
/// seed, the argument and the sample's index only (Philox4x32-10 counters),
/// so any split of a batch over replicas sees the values one rank would.
/// Normal (Box-Muller), uniform in [a, b), or integers in [0, a).
void initializeSamples(const TensorInfo &t, unsigned index, long long seed, Buffer &buffer,
                       int64_t first, int64_t count);

/// The arrays of `path` (an .npz, as `--load` takes it) by argument name,
/// each checked against `info`: a name that is no argument of the step, or
/// a shape or element type that differs, is an error naming the file, the
/// array and what the step expects. `batchRows` >= 0 replaces the first
/// dimension of every batched argument (a pipeline loads its global batch).
std::map<std::string, eval::HostArray> loadArguments(const std::string &path,
                                                      const ModelInfo &info,
                                                      int64_t batchRows = -1);

/// Dies, naming them, when arguments of role "const" (constants the PyTorch
/// importer exported into the model's .npz) are not among `given`: seeded
/// values would train a different model.
void requireConstants(const ModelInfo &info, const std::set<std::string> &given,
                      const std::string &loadPath);

/// Copies t.count() elements of a loaded array, from element `first` on,
/// into a buffer holding `t` (f32 or i64): the whole argument, or some rows.
void copyLoaded(const eval::HostArray &array, const TensorInfo &t, Buffer &buffer,
                int64_t first = 0);

/// The classes a classifier's labels range over (the step's info records
/// the last dimension of the logits their cross-entropy reads); 0 when
/// `labels` says none.
int64_t classesOf(const TensorInfo &labels);

/// A dataset: x [N, ...] as floats, y [N] as labels.
struct Dataset {
  std::vector<float> x;
  std::vector<int64_t> y;
  int64_t size = 0, sampleSize = 0;
};

Dataset loadDataset(const std::string &path, const TensorInfo &data, const TensorInfo &labels,
                    int64_t batch);

/// Where a classifier's samples come from: sample g of the run's stream
/// (step s takes g = s x global batch + 0, 1, ...) is the same for every
/// reader with the same seed, so ranks that each take some samples of a
/// step see what one rank taking all of them would see.
class SampleSource {
public:
  virtual ~SampleSource() = default;
  /// Copies samples [first, first + count) of the stream into x (floats,
  /// one sample after another) and y (one label each).
  virtual void fillSamples(int64_t first, int64_t count, float *x, int64_t *y) = 0;
  /// Starts reading samples [first, first + count) ahead, if the source
  /// reads from storage.
  virtual void prefetch(int64_t first, int64_t count) {}
  /// The step the next samples are for (--log-samples).
  virtual void setStep(int64_t step) {}
};

/// Batches of an .npz dataset held in memory, in epoch-wise shuffled order.
class BatchStream : public SampleSource {
public:
  BatchStream(const Dataset &data, int64_t batch, long long seed);
  /// Copies samples [first, first + count) of the stream into x and y; an
  /// epoch is every whole batch of the dataset, reshuffled (first never
  /// moves back to an earlier epoch between calls).
  void fillSamples(int64_t first, int64_t count, float *x, int64_t *y) override;

private:
  const Dataset &data_;
  int64_t batch_, perEpoch_, epoch_ = -1;
  std::mt19937_64 shuffler_;
  std::vector<int64_t> order_;
};

} // namespace het::rt

#endif
