//===- ModelDesc.cpp - layer costs from JSON or the GPT formulas ----------===//
#include "het/Plan/ModelDesc.h"
#include "JsonUtil.h"

#include <algorithm>

namespace het::plan {
using namespace json_util;

char LayerDesc::statusAt(int degree) const {
  auto it = tensorParallelStatus.find(degree);
  return it == tensorParallelStatus.end() ? (tensorParallel ? 's' : 'r') : it->second;
}

bool ModelDesc::tensorParallelFits(int b, int e, int degree) const {
  if (degree <= 1)
    return true;
  bool splits = false;
  for (int l = b; l < e; ++l) {
    char status = layers[l].statusAt(degree);
    if (status == 'p')
      return false;
    splits |= status == 's';
  }
  return splits;
}

bool ModelDesc::pricesSelective() const {
  return !layers.empty() &&
         std::all_of(layers.begin(), layers.end(),
                     [](const LayerDesc &l) { return l.selective.analysed; });
}

bool ModelDesc::keepsTiedLayers(int b, int e) const {
  return tiedExchangeElements(b, e) == 0;
}

bool ModelDesc::Tie::readIn(int b, int e) const {
  return std::any_of(layers.begin(), layers.end(), [&](int l) { return l >= b && l < e; });
}

double ModelDesc::tiedCopyElements(int b, int e) const {
  double elements = 0;
  for (const Tie &tie : ties)
    if (tie.copiedInto(b, e))
      elements += tie.elements;
  return elements;
}

double ModelDesc::tiedExchangeElements(int b, int e) const {
  double elements = 0;
  for (const Tie &tie : ties)
    // Read here and outside (the layers are ascending).
    if (tie.readIn(b, e) && (tie.layers.front() < b || tie.layers.back() >= e))
      elements += tie.elements;
  return elements;
}

double ModelDesc::totalParams() const {
  double p = 0;
  for (const auto &l : layers)
    p += l.params;
  return p;
}

static int bytesOf(const std::string &dtype, const std::string &file,
                   const std::string &at) {
  if (dtype == "fp32" || dtype == "tf32")
    return 4;
  if (dtype == "fp16" || dtype == "bf16")
    return 2;
  if (dtype == "fp8")
    return 1;
  fail(file, at, "unknown dtype '" + dtype + "' (fp32, tf32, fp16, bf16, fp8)");
}

ModelDesc makeGptModel(const std::string &name, int blocks, int hidden,
                       int heads, int seq, int vocab,
                       const std::string &dtype) {
  DecoderShape shape;
  shape.blocks = blocks;
  shape.hidden = hidden;
  shape.heads = heads;
  shape.seq = seq;
  shape.vocab = vocab;
  shape.dtype = dtype;
  return makeDecoderModel(name, shape);
}

ModelDesc makeDecoderModel(const std::string &name, const DecoderShape &shape) {
  ModelDesc m;
  m.name = name;
  m.dtype = shape.dtype;
  m.bytesPerElement = bytesOf(shape.dtype, name, "dtype");
  const double s = shape.seq, h = shape.hidden, a = shape.heads, v = shape.vocab,
               e = m.bytesPerElement;
  const double kv = shape.kvHeads > 0 ? shape.kvHeads : shape.heads;
  const double f = shape.ffnHidden > 0 ? shape.ffnHidden : 4 * h;
  const double mlpMatrices = shape.gatedMlp ? 3 : 2;
  // Korthikanti et al. count 34*s*h + 5*a*s^2 bytes in 16-bit types for
  // GPT's block: attention 11 s h + 5 a s^2 (its K and V 4 s h of it), MLP
  // 19 s h (3 s h + 4 s f with f = 4h), layer norms 4 s h. Grouped-query
  // attention shrinks K and V by kv/a; a gated MLP stashes a third f-wide
  // tensor; FlashAttention keeps no scores.
  const double attention =
      (7 + 4 * kv / a) * s * h + (shape.flashAttention ? 0 : 5 * a * s * s);
  const double mlp = 3 * s * h + (shape.gatedMlp ? 6 : 4) * s * f;
  const double blockStash = (attention + mlp + 4 * s * h) * e / 2;
  const double matrixParams = 2 * h * h + 2 * h * h * kv / a + mlpMatrices * h * f;
  // Biases of Q, K, V, the projection and the MLP matrices; two norms with
  // scale and shift (layer norm) or scale alone (RMS norm).
  const double biasParams =
      shape.biases ? h + 2 * h * kv / a + h + (mlpMatrices - 1) * f + h + 4 * h : 2 * h;

  LayerDesc emb;
  emb.name = "embedding";
  emb.params = v * h + (shape.biases ? s * h : 0); // learned positions (GPT) or rotary
  emb.fwdFlops = 2 * s * h;
  emb.bwdFlops = 2 * emb.fwdFlops;
  emb.ioBytes = 3 * s * h * e;
  emb.outputBytes = s * h * e;
  emb.stashBytes = s * h * e;
  emb.gradientBytes = 2 * s * h * e;
  emb.fwdKernels = 2; // token and position lookups
  emb.bwdKernels = 4;
  m.layers.push_back(emb);

  for (int i = 0; i < shape.blocks; ++i) {
    LayerDesc b;
    b.name = "block" + std::to_string(i);
    b.params = matrixParams + biasParams;
    b.fwdFlops = 2 * s * matrixParams + 4 * s * s * h;
    b.bwdFlops = 2 * b.fwdFlops;
    b.ioBytes = blockStash;
    b.outputBytes = s * h * e;
    b.stashBytes = blockStash;
    // The MLP's hidden gradient beside its input's and the residual's.
    b.gradientBytes = s * (f + 2 * h) * e;
    // Megatron's block: two layer norms, QKV, attention, projection, two
    // MLP matrices, GeLU, two dropout-add-residuals.
    b.fwdKernels = 10;
    b.bwdKernels = 20;
    m.layers.push_back(b);
  }

  LayerDesc head;
  head.name = "head";
  head.params = v * h + 2 * h;
  head.fwdFlops = 2 * s * h * v;
  head.bwdFlops = 2 * head.fwdFlops;
  head.ioBytes = 2 * s * v * e + s * h * e;
  head.outputBytes = 0;
  head.stashBytes = s * v * e + s * h * e;
  head.gradientBytes = s * v * 4 + s * h * e; // the logits' gradient is f32
  head.fwdKernels = 3; // final norm, logits, cross-entropy
  head.bwdKernels = 6;
  m.layers.push_back(head);
  return m;
}

ModelDesc loadModelJson(const std::string &path) {
  return parseModelJson(readFile(path), path);
}

ModelDesc parseModelJson(const json &j, const std::string &file) {
  std::string name = string(j, "name", file, "");
  if (j.contains("gpt")) {
    const json &g = j["gpt"];
    DecoderShape shape;
    shape.dtype = stringOr(g, "dtype", "bf16", file, "gpt");
    shape.blocks = int(integer(g, "blocks", file, "gpt", 1));
    shape.hidden = int(integer(g, "hidden", file, "gpt", 1));
    shape.heads = int(integer(g, "heads", file, "gpt", 1));
    shape.seq = int(integer(g, "seq", file, "gpt", 1));
    shape.vocab = int(integer(g, "vocab", file, "gpt", 1));
    if (g.contains("kv_heads")) {
      shape.kvHeads = int(integer(g, "kv_heads", file, "gpt", 1));
      if (shape.heads % shape.kvHeads != 0)
        fail(file, "gpt.kv_heads", "must divide gpt.heads (" + std::to_string(shape.heads) + ")");
    }
    if (g.contains("ffn_hidden"))
      shape.ffnHidden = int(integer(g, "ffn_hidden", file, "gpt", 1));
    auto flag = [&](const char *key, bool fallback) {
      if (!g.contains(key))
        return fallback;
      if (!g[key].is_boolean())
        fail(file, std::string("gpt.") + key, "must be true or false");
      return g[key].get<bool>();
    };
    shape.gatedMlp = flag("gated_mlp", false);
    shape.biases = flag("biases", true);
    shape.flashAttention = flag("flash_attention", false);
    ModelDesc m = makeDecoderModel(name, shape);
    m.file = file;
    return m;
  }
  ModelDesc m;
  m.name = name;
  m.file = file;
  m.dtype = stringOr(j, "dtype", "fp32", file, "");
  m.bytesPerElement = bytesOf(m.dtype, file, "dtype");
  const json &layers = array(j, "layers", file, "");
  for (size_t i = 0; i < layers.size(); ++i) {
    const json &l = layers[i];
    std::string at = join("layers", i);
    LayerDesc d;
    d.name = stringOr(l, "name", "layer" + std::to_string(i), file, at);
    d.fwdFlops = positive(l, "fwd_flops", file, at, true);
    d.bwdFlops = l.contains("bwd_flops")
                     ? positive(l, "bwd_flops", file, at, true)
                     : 2 * d.fwdFlops;
    d.params = positive(l, "params", file, at, true);
    d.ioBytes = positive(l, "io_bytes", file, at, true);
    d.outputBytes = positive(l, "output_bytes", file, at, true);
    d.stashBytes = positive(l, "stash_bytes", file, at, true);
    d.gradientBytes = l.contains("gradient_bytes")
                          ? positive(l, "gradient_bytes", file, at, true)
                          : 2 * d.outputBytes;
    d.tensorParallel = boolOr(l, "tensor_parallel", true, file, at);
    d.fwdKernels = int(l.contains("kernels") ? integer(l, "kernels", file, at, 0) : 1);
    d.bwdKernels = 2 * d.fwdKernels;
    m.layers.push_back(d);
  }
  return m;
}

json modelToJson(const ModelDesc &m) {
  json layers = json::array();
  for (const auto &l : m.layers)
    layers.push_back({{"name", l.name},
                      {"fwd_flops", l.fwdFlops},
                      {"bwd_flops", l.bwdFlops},
                      {"params", l.params},
                      {"io_bytes", l.ioBytes},
                      {"output_bytes", l.outputBytes},
                      {"stash_bytes", l.stashBytes},
                      {"gradient_bytes", l.gradientBytes},
                      {"tensor_parallel", l.tensorParallel},
                      {"kernels", l.fwdKernels}});
  return {{"name", m.name}, {"dtype", m.dtype}, {"layers", layers}};
}

} // namespace het::plan
