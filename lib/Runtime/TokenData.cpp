//===- TokenData.cpp - language-model data from a token file --------------===//

#include "TokenData.h"

#include "Arguments.h"
#include "ModelInfo.h"
#include "SampleOrder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace het::rt {

bool isTokenFile(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
}

TokenArguments tokenArguments(const ModelInfo &info, const std::string &use) {
  TokenArguments a;
  for (unsigned i = 0; i < info.inputs.size(); ++i) {
    const TensorInfo &t = info.inputs[i];
    if (t.shape.size() != 2 || !t.isInteger())
      continue;
    if (t.role == "index" && t.init == "randint" && a.input < 0)
      a.input = static_cast<int>(i);
    else if (t.role == "label" && a.targets < 0)
      a.targets = static_cast<int>(i);
  }
  if (a.input < 0 || a.targets < 0 ||
      info.inputs[a.input].shape != info.inputs[a.targets].shape)
    die(use + ", which needs a language model: token ids and "
        "next-token labels, both integer arguments of shape [batch, window]; this model has " +
        std::string(a.input < 0 ? "no such token ids" : "no such labels"));
  a.window = info.inputs[a.input].shape[1];
  a.vocab = static_cast<int64_t>(info.inputs[a.input].a);
  for (unsigned i = 0; i < info.inputs.size(); ++i) {
    const TensorInfo &t = info.inputs[i];
    if (t.isInteger() && t.shape == std::vector<int64_t>{a.window} && t.role == "index" &&
        t.init == "randint" && static_cast<int64_t>(t.a) == a.window && !info.isBatched(t.name))
      a.positions = static_cast<int>(i);
  }
  return a;
}

void TokenArguments::fillPositions(int64_t *ids) const {
  for (int64_t t = 0; t < window; ++t)
    ids[t] = t;
}

TokenFile::TokenFile(const std::string &path, int64_t window, int64_t vocab)
    : file_(path, "--data") {
  // The element type: the file's metadata, else nanoGPT's uint16.
  std::string dtype = "uint16";
  if (std::ifstream meta(path + ".json"); meta) {
    nlohmann::json j;
    try {
      meta >> j;
      dtype = j.value("dtype", dtype);
    } catch (const std::exception &e) {
      die(path + ".json: not the metadata of a token file (" + e.what() + ")");
    }
  }
  if (dtype != "uint16" && dtype != "uint32")
    die(path + ".json: dtype '" + dtype + "': a token file holds uint16 or uint32 ids");
  width_ = dtype == "uint16" ? 2 : 4;
  size_t bytes = file_.size();
  if (bytes % width_ != 0)
    die("--data " + path + ": its " + std::to_string(bytes) + " bytes are not a whole number of " +
        dtype + " token ids (" + std::to_string(width_) + " bytes each)");
  count_ = bytes / width_;
  if (count_ < static_cast<uint64_t>(window) + 1)
    die("--data " + path + ": " + std::to_string(count_) + " tokens, fewer than one window of " +
        std::to_string(window) + " plus its next token");
  data_ = file_.bytes();
  // Every id within the model's vocabulary, checked once before training:
  // an embedding lookup past its table would read other memory.
  file_.advise(MADV_SEQUENTIAL);
  for (uint64_t i = 0; i < count_; ++i)
    if (token(i) >= vocab)
      die("--data " + path + ": token " + std::to_string(i) + " is id " +
          std::to_string(token(i)) + ", outside the model's vocabulary of " +
          std::to_string(vocab) + " (was the file prepared with another tokenizer?)");
  file_.advise(MADV_RANDOM);
}

void TokenFile::willNeed(uint64_t first, uint64_t count) const {
  file_.willNeed(first * width_, count * width_);
}

TokenStream::TokenStream(const TokenFile &file, int64_t window, long long seed)
    : file_(file), window_(window), seed_(static_cast<uint64_t>(seed)),
      windows_((file.tokens() - 1) / static_cast<uint64_t>(window)),
      readAhead_([this](int64_t first, int64_t count) {
        for (int64_t g = first; g < first + count; ++g)
          file_.willNeed(windowStart(static_cast<uint64_t>(g)), static_cast<uint64_t>(window_) + 1);
      }) {}

uint64_t TokenStream::windowStart(uint64_t g) const {
  uint64_t epoch = g / windows_, position = g % windows_;
  return permuteSample(position, windows_, seed_, epoch) * static_cast<uint64_t>(window_);
}

void TokenStream::fillSamples(int64_t first, int64_t count, int64_t *input, int64_t *targets) {
  for (int64_t b = 0; b < count; ++b) {
    uint64_t g = static_cast<uint64_t>(first + b), start = windowStart(g);
    for (int64_t t = 0; t < window_; ++t) {
      if (input)
        input[b * window_ + t] = file_.token(start + t);
      if (targets)
        targets[b * window_ + t] = file_.token(start + t + 1);
    }
    log_.sample(g, "window-start", start);
  }
}

void TokenStream::prefetch(int64_t first, int64_t count) { readAhead_.request(first, count); }

} // namespace het::rt
