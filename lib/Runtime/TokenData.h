//===- TokenData.h - language-model data from a token file ------*- C++ -*-===//
//
// A token file is a flat array of token ids (uint16 or uint32, the format
// of nanoGPT-style train.bin files; `python -m het.data prepare` writes
// one), memory-mapped, never read whole. A language model's samples are
// windows of it: sample g of the step stream takes tokens [s, s + T) as
// input and [s + 1, s + T + 1) as targets, where the window start s is a
// function of (seed, epoch, g) alone. An epoch visits every
// non-overlapping window once, in an order a keyed permutation
// (cycle-walking Feistel network over Philox) gives; so any rank of any
// plan, replica split, micro-batching or restart finds the samples it is
// given without state and without reading anyone else's, and step s of
// every plan trains on the same windows.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_TOKENDATA_H
#define HET_LIB_RUNTIME_TOKENDATA_H

#include "MappedFile.h"
#include "SampleOrder.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace het::rt {

struct ModelInfo;

/// Whether --data names a token file (.bin) rather than an .npz dataset.
bool isTokenFile(const std::string &path);

/// The step arguments a token file feeds: the token ids (an integer input
/// of shape [batch, window]) and the next tokens (the label, of the same
/// shape); `vocab` from the ids' declared range; and the position ids, if
/// the model takes them (an integer argument of shape [window] ranging over
/// the window), which are 0, 1, ..., window - 1 for real text. Dies,
/// saying what the model has instead, when it is not such a language model.
struct TokenArguments {
  int input = -1, targets = -1, positions = -1;
  int64_t window = 0, vocab = 0;
  /// Writes the position ids into `ids` (window values).
  void fillPositions(int64_t *ids) const;
};
/// `use` says what asked, for the error ("--data F.bin is a token file").
TokenArguments tokenArguments(const ModelInfo &info, const std::string &use);

class TokenFile {
public:
  /// Maps `path`; its element type comes from `<path>.json` ("dtype":
  /// "uint16" or "uint32", as het.data prepare writes it), else uint16.
  /// Dies naming the file and the reason when it cannot be a token file
  /// for windows of `window` tokens and a vocabulary of `vocab` (every id
  /// is checked before the first step).
  TokenFile(const std::string &path, int64_t window, int64_t vocab);

  uint64_t tokens() const { return count_; }
  int64_t token(uint64_t i) const {
    return width_ == 2 ? reinterpret_cast<const uint16_t *>(data_)[i]
                       : reinterpret_cast<const uint32_t *>(data_)[i];
  }
  /// Asks the kernel to read tokens [first, first + count) ahead.
  void willNeed(uint64_t first, uint64_t count) const;

private:
  MappedFile file_;
  const char *data_ = nullptr;
  uint64_t count_ = 0;
  int width_ = 2;
};

/// The windows of a token file, sample by sample.
class TokenStream {
public:
  TokenStream(const TokenFile &file, int64_t window, long long seed);
  /// Windows per epoch: the non-overlapping windows of the file.
  uint64_t windowsPerEpoch() const { return windows_; }
  /// The first token of global sample `g`'s window.
  uint64_t windowStart(uint64_t g) const;
  /// Samples [first, first + count): tokens into `input`, the next tokens
  /// into `targets` (each count x window int64 values).
  void fillSamples(int64_t first, int64_t count, int64_t *input, int64_t *targets);
  /// Starts reading samples [first, first + count) ahead on the prefetch
  /// thread (the pages of their windows), while the step runs.
  void prefetch(int64_t first, int64_t count);
  /// Appends "step S sample G window-start W" per sample filled to `path`.
  void logSamples(const std::string &path, int rank) { log_.open(path, rank); }
  void setStep(int64_t step) { log_.setStep(step); }

private:
  const TokenFile &file_;
  int64_t window_;
  uint64_t seed_, windows_ = 0;
  SampleLog log_;
  ReadAhead readAhead_; // last: its thread reads the members above
};

} // namespace het::rt

#endif
