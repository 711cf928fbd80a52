//===- Generate.cpp - decoding tokens from a trained language model -------===//
#include "Generate.h"

#include "Arguments.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace het::rt {

std::vector<int64_t> parsePrompt(const std::string &text, int64_t vocab) {
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream in(spaced);
  std::vector<int64_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != word.size() || id < 0 || id >= vocab)
      die("--prompt '" + text + "': '" + word + "' is no token id of the model's vocabulary [0, " +
          std::to_string(vocab) + ")");
    ids.push_back(id);
  }
  if (ids.empty())
    die("--prompt '" + text + "' holds no token ids (give them as 464,3290,318 or \"464 3290\")");
  return ids;
}

namespace {
/// splitmix64: a seeded stream of 64-bit values, the same on every platform
/// (std::uniform_real_distribution is not).
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
};
} // namespace

std::vector<int64_t> generate(std::vector<int64_t> sequence, const Decoding &decoding,
                              int64_t batch, int64_t window, int64_t vocab, int64_t *ids,
                              const float *logits, const std::function<void()> &predict) {
  SplitMix random{decoding.seed};
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  for (int64_t n = 0; n < decoding.tokens; ++n) {
    int64_t length = std::min<int64_t>(static_cast<int64_t>(sequence.size()), window);
    const int64_t *context = sequence.data() + sequence.size() - length;
    for (int64_t b = 0; b < batch; ++b) {
      std::copy(context, context + length, ids + b * window);
      std::fill(ids + b * window + length, ids + (b + 1) * window, 0);
    }
    predict();
    const float *row = logits + (length - 1) * vocab; // row 0, the last position
    int64_t next;
    if (decoding.topK <= 0) {
      next = std::max_element(row, row + vocab) - row; // the first of equal maxima
    } else {
      int64_t k = std::min<int64_t>(decoding.topK, vocab);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
      std::vector<double> weights(static_cast<size_t>(k));
      double top = row[order[0]], total = 0;
      for (int64_t i = 0; i < k; ++i)
        total += weights[i] = std::exp((double(row[order[i]]) - top) / decoding.temperature);
      double u = random.uniform() * total;
      int64_t pick = 0;
      while (pick + 1 < k && u >= weights[pick])
        u -= weights[pick++];
      next = order[pick];
    }
    sequence.push_back(next);
  }
  return sequence;
}

} // namespace het::rt
