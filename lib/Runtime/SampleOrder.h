//===- SampleOrder.h - the order an epoch visits samples in ----*- C++ -*-===//
//
// Sample g of a run's stream (step s takes g = s x global batch + 0, 1,
// ...) is item permuteSample(g mod N, N, seed, g / N) of a data set of N
// items (windows of a token file, rows of sample shards): a keyed
// permutation per epoch, a function of its arguments alone. So any rank of
// any plan, replica split, micro-batching, restart or re-plan finds its
// samples without state and without reading anyone else's.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_SAMPLEORDER_H
#define HET_LIB_RUNTIME_SAMPLEORDER_H

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace het::rt {

/// A keyed permutation of [0, n): a four-round Feistel network over the
/// smallest even number of bits that holds n, its round function Philox,
/// walked until the result is below n (fewer than four steps expected).
uint64_t permuteSample(uint64_t x, uint64_t n, uint64_t seed, uint64_t epoch);

/// --log-samples: one line per sample trained on, "step S sample G
/// <what> V rank R", appended (line-buffered, so the ranks of a job share
/// the file without interleaving their lines). Off until opened.
class SampleLog {
public:
  ~SampleLog();
  void open(const std::string &path, int rank);
  void setStep(int64_t step) { step_ = step; }
  /// Logs global sample `g`, which read `what` `value` (its window start,
  /// its item).
  void sample(uint64_t g, const char *what, uint64_t value) const;

private:
  std::FILE *file_ = nullptr;
  int rank_ = 0;
  int64_t step_ = 0;
};

/// A thread that reads samples ahead while a step computes: `read(first,
/// count)` runs on it for the latest request (a request not yet served is
/// replaced by a newer one).
class ReadAhead {
public:
  explicit ReadAhead(std::function<void(int64_t first, int64_t count)> read);
  ~ReadAhead();
  ReadAhead(const ReadAhead &) = delete;
  ReadAhead &operator=(const ReadAhead &) = delete;
  void request(int64_t first, int64_t count);

private:
  std::function<void(int64_t, int64_t)> read_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable wake_;
  int64_t wantFirst_ = 0, wantCount_ = 0;
  bool pending_ = false, stop_ = false;
};

} // namespace het::rt

#endif
