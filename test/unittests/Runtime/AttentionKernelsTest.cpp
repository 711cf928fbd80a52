//===- AttentionKernelsTest.cpp - libhetrt's blocked attention kernels -----===//
//
// hetrt_dnnl_attention and hetrt_dnnl_attention_grad, called as generated
// code calls them, against the evaluator's attention (the unfused ops, in
// double precision) on shapes that exercise the blocking: query blocks of
// 64 rows with a ragged last one, more keys than queries, fewer keys than
// queries (queries that see no key), values narrower than keys; and the
// same bits on one thread and on two (every block is one thread's work).
//
//===----------------------------------------------------------------------===//

#include "Eval/Kernels.h" // lib/ is on this test's include path

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

extern "C" void hetrt_dnnl_attention(const int64_t *meta, void *const *buffers);
extern "C" void hetrt_dnnl_attention_grad(const int64_t *meta, void *const *buffers);

namespace {

using het::eval::Shape;
using het::eval::Tensor;

struct Case {
  int64_t heads, queries, keys, depth, valueDepth;
  double scale;
  bool causal;
};

/// The meta words het-compile emits: counts, each buffer's rank and sizes,
/// then the scale's bits and causal.
std::vector<int64_t> meta(const std::vector<Shape> &operands, const std::vector<Shape> &results,
                          double scale, bool causal) {
  std::vector<int64_t> words{static_cast<int64_t>(operands.size()),
                             static_cast<int64_t>(results.size())};
  for (const auto *list : {&operands, &results})
    for (const Shape &shape : *list) {
      words.push_back(static_cast<int64_t>(shape.size()));
      words.insert(words.end(), shape.begin(), shape.end());
    }
  int64_t bits;
  std::memcpy(&bits, &scale, sizeof bits);
  words.push_back(bits);
  words.push_back(causal);
  return words;
}

Tensor<float> random(Shape shape, std::mt19937 &generator) {
  Tensor<float> t(std::move(shape));
  std::normal_distribution<float> normal;
  for (float &x : t.data)
    x = normal(generator);
  return t;
}

Tensor<double> widened(const Tensor<float> &t) {
  Tensor<double> wide(t.shape);
  std::copy(t.data.begin(), t.data.end(), wide.data.begin());
  return wide;
}

/// Largest difference relative to the reference's largest magnitude.
double relativeError(const std::vector<float> &got, const Tensor<double> &want) {
  double peak = 1e-30, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    peak = std::max(peak, std::abs(want.data[i]));
    worst = std::max(worst, std::abs(double(got[i]) - want.data[i]));
  }
  return worst / peak;
}

struct KernelResults {
  std::vector<float> output, dQuery, dKey, dValue;
};

KernelResults runKernels(const Case &c, const Tensor<float> &q, const Tensor<float> &k,
               const Tensor<float> &v, const Tensor<float> &dOut, int threads) {
  omp_set_num_threads(threads);
  KernelResults run;
  run.output.assign(c.heads * c.queries * c.valueDepth, std::nanf(""));
  std::vector<int64_t> forward = meta({q.shape, k.shape, v.shape}, {dOut.shape}, c.scale, c.causal);
  void *buffers[] = {const_cast<float *>(q.data.data()), const_cast<float *>(k.data.data()),
                     const_cast<float *>(v.data.data()), run.output.data()};
  hetrt_dnnl_attention(forward.data(), buffers);
  // Results start as NaN: every element must be written.
  run.dQuery.assign(q.data.size(), std::nanf(""));
  run.dKey.assign(k.data.size(), std::nanf(""));
  run.dValue.assign(v.data.size(), std::nanf(""));
  std::vector<int64_t> backward = meta({dOut.shape, q.shape, k.shape, v.shape, dOut.shape},
                                       {q.shape, k.shape, v.shape}, c.scale, c.causal);
  void *gradBuffers[] = {const_cast<float *>(dOut.data.data()), const_cast<float *>(q.data.data()),
                         const_cast<float *>(k.data.data()), const_cast<float *>(v.data.data()),
                         run.output.data(), run.dQuery.data(), run.dKey.data(),
                         run.dValue.data()};
  hetrt_dnnl_attention_grad(backward.data(), gradBuffers);
  return run;
}

class AttentionKernels : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionKernels, MatchTheEvaluatorAndTheThreadCount) {
  const Case &c = GetParam();
  std::mt19937 generator(7);
  // Two leading dimensions (batch 1, `heads` heads), as a model has them.
  Tensor<float> q = random({1, c.heads, c.queries, c.depth}, generator);
  Tensor<float> k = random({1, c.heads, c.keys, c.depth}, generator);
  Tensor<float> v = random({1, c.heads, c.keys, c.valueDepth}, generator);
  Tensor<float> dOut = random({1, c.heads, c.queries, c.valueDepth}, generator);

  Tensor<double> wantOutput =
      het::eval::attention(widened(q), widened(k), widened(v), c.scale, c.causal);
  auto wantGrads = het::eval::attentionGrad(widened(dOut), widened(q), widened(k), widened(v),
                                            c.scale, c.causal);

  KernelResults one = runKernels(c, q, k, v, dOut, 1);
  EXPECT_LT(relativeError(one.output, wantOutput), 2e-6);
  EXPECT_LT(relativeError(one.dQuery, wantGrads[0]), 2e-5);
  EXPECT_LT(relativeError(one.dKey, wantGrads[1]), 2e-5);
  EXPECT_LT(relativeError(one.dValue, wantGrads[2]), 2e-5);

  KernelResults two = runKernels(c, q, k, v, dOut, 2);
  EXPECT_EQ(0, std::memcmp(one.output.data(), two.output.data(), one.output.size() * 4));
  EXPECT_EQ(0, std::memcmp(one.dQuery.data(), two.dQuery.data(), one.dQuery.size() * 4));
  EXPECT_EQ(0, std::memcmp(one.dKey.data(), two.dKey.data(), one.dKey.size() * 4));
  EXPECT_EQ(0, std::memcmp(one.dValue.data(), two.dValue.data(), one.dValue.size() * 4));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionKernels,
    ::testing::Values(Case{3, 70, 90, 8, 5, 0.35, true},    // more keys; blocks of 64 and 6
                      Case{2, 90, 70, 8, 8, 0.5, true},     // 20 queries see no key
                      Case{2, 130, 130, 16, 16, 0.25, true}, // three blocks, square
                      Case{2, 130, 40, 8, 4, 1.0, false},    // not causal
                      Case{1, 1, 1, 4, 4, 1.0, true}));      // one query, one key

} // namespace
