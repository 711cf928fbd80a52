//===- SampleShards.h - a classifier's samples in .npy shards ---*- C++ -*-===//
//
// A data set too large for one in-memory .npz: a folder of shards
// x-K.npy (samples [n_K, ...], float32) and y-K.npy (labels [n_K], integer),
// K any names that pair them (python -m het.data shard writes x-00000.npy
// ...). Shards are taken in the sorted order of their names, as one set of
// N = sum n_K samples; each is memory-mapped, never read whole, and checked
// before the first step (dtypes, shapes, sizes, labels within the model's
// classes). Sample g of the run's stream is item permuteSample(g mod N)
// (SampleOrder.h) of epoch g / N: each rank reads its own samples only, the
// same ones under every plan, and a prefetch thread pages the next step's
// in while a step computes.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_SAMPLESHARDS_H
#define HET_LIB_RUNTIME_SAMPLESHARDS_H

#include "Arguments.h"
#include "MappedFile.h"
#include "SampleOrder.h"

#include "het/Eval/Npy.h"

#include <memory>
#include <string>
#include <vector>

namespace het::rt {

/// Whether --data names a folder of sample shards.
bool isSampleShards(const std::string &path);

class SampleShards : public SampleSource {
public:
  /// Maps every shard in `folder`; `data` and `labels` are the model's
  /// arguments for a batch of `batch` samples; `classes` bounds the labels
  /// (0: only their sign is checked). Dies naming the shard and the reason
  /// when the folder cannot feed them.
  SampleShards(const std::string &folder, const TensorInfo &data, const TensorInfo &labels,
               int64_t batch, int64_t classes, long long seed);

  int64_t samples() const { return total_; }
  size_t shards() const { return x_.size(); }
  /// The item (row of the concatenated shards) global sample `g` reads.
  uint64_t item(uint64_t g) const;
  void fillSamples(int64_t first, int64_t count, float *x, int64_t *y) override;
  void prefetch(int64_t first, int64_t count) override { readAhead_.request(first, count); }
  void setStep(int64_t step) override { log_.setStep(step); }
  /// Appends "step S sample G item I rank R" per sample filled to `path`.
  void logSamples(const std::string &path, int rank) { log_.open(path, rank); }

private:
  struct Shard {
    MappedFile file;
    eval::NpyHeader header;
    const char *data() const { return file.bytes() + header.dataOffset; }
  };
  static Shard map(const std::string &path);
  /// The shard holding `item` and its row there.
  std::pair<size_t, int64_t> locate(uint64_t item) const;

  std::vector<Shard> x_, y_;
  std::vector<int64_t> starts_; // each shard's first item; the last entry is N
  int64_t sampleSize_ = 0, total_ = 0;
  uint64_t seed_ = 0;
  SampleLog log_;
  ReadAhead readAhead_; // last: its thread reads the members above
};

/// --data DIR for a classifier, as both executables open it: the model's
/// data and label arguments (a batch per call, their first dimension; dies
/// naming the problem when the model has no such pair), at least `needed`
/// samples (`what`: "one batch of 32"), and with --log-samples F a log as
/// `rank`.
std::unique_ptr<SampleShards> openSampleShards(const std::string &folder, const ModelInfo &info,
                                               int dataInput, int labelInput,
                                               int64_t needed, const std::string &what,
                                               long long seed, const std::string &logSamples,
                                               int rank);

} // namespace het::rt

#endif
