//===- Generate.h - decoding tokens from a trained language model -*- C++ -*-===//
//
// A compiled language model has a predict function: token ids [batch,
// window] -> logits [batch, window, vocabulary], with the training step's
// fixed window. Decoding runs it once per new token on a window holding
// the sequence so far (every row the same; the positions after the
// sequence hold token 0, which a causal model's earlier positions never
// read), takes the logits at the sequence's last position and picks the
// next token: the largest (greedy: transformers' generate with
// do_sample=False picks the same, the first of equal maxima), or a draw
// from the k largest at a temperature. Once the sequence outgrows the
// window, the window holds its last `window` tokens (as nanoGPT crops).
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_GENERATE_H
#define HET_LIB_RUNTIME_GENERATE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace het::rt {

struct Decoding {
  int64_t tokens = 0;        // how many to append
  int64_t topK = 0;          // 0: greedy
  double temperature = 1.0;  // of top-k sampling
  uint64_t seed = 0;         // of top-k sampling
};

/// Token ids from "--prompt" text: integers separated by commas or spaces.
/// Dies naming the text when one is no id below `vocab` or there are none.
std::vector<int64_t> parsePrompt(const std::string &text, int64_t vocab);

/// `sequence` with `decoding.tokens` tokens appended. `ids` is the predict
/// function's token-id buffer (batch x window), `logits` its output
/// (batch x window x vocab), `predict` runs it.
std::vector<int64_t> generate(std::vector<int64_t> sequence, const Decoding &decoding,
                              int64_t batch, int64_t window, int64_t vocab, int64_t *ids,
                              const float *logits, const std::function<void()> &predict);

} // namespace het::rt

#endif
