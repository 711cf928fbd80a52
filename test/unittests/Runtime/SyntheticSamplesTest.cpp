//===- SyntheticSamplesTest.cpp - a pipeline's synthetic per-sample data --===//
//
// initializeSamples draws each sample's values from (seed, argument,
// sample index) alone: any split of a batch over micro-batches and
// replicas gets the bits one rank would, seeds and arguments differ, and
// the distributions are what the argument's `init` says.
//
//===----------------------------------------------------------------------===//

#include "Runtime/Arguments.h" // lib/ is on this test's include path
#include "Runtime/ModelInfo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace {

using het::rt::Buffer;
using het::rt::TensorInfo;

TensorInfo argument(std::string init, bool integer, std::vector<int64_t> shape, double a = 0,
                    double b = 0) {
  TensorInfo t;
  t.name = "x";
  t.format = integer ? "i64" : "f32";
  t.shape = std::move(shape);
  t.role = "data";
  t.init = std::move(init);
  t.a = a;
  t.b = b;
  return t;
}

Buffer draw(const TensorInfo &t, unsigned index, long long seed, int64_t first, int64_t count) {
  TensorInfo local = t;
  local.shape[0] = count;
  Buffer b(het::rt::bytesOf(local));
  het::rt::initializeSamples(t, index, seed, b, first, count);
  return b;
}

TEST(SyntheticSamples, AnySplitGivesTheSameBits) {
  TensorInfo t = argument("normal", false, {64, 7, 3}); // rows of 21: not a multiple of 4
  Buffer whole = draw(t, 2, 5, 128, 64);
  size_t row = 21 * sizeof(float);
  for (int64_t split : {1, 5, 32, 63}) {
    Buffer head = draw(t, 2, 5, 128, split), tail = draw(t, 2, 5, 128 + split, 64 - split);
    EXPECT_EQ(std::memcmp(whole.f(), head.f(), split * row), 0) << split;
    EXPECT_EQ(std::memcmp(whole.f() + split * 21, tail.f(), (64 - split) * row), 0) << split;
  }
  EXPECT_NE(std::memcmp(whole.f(), draw(t, 3, 5, 128, 64).f(), 64 * row), 0); // argument
  EXPECT_NE(std::memcmp(whole.f(), draw(t, 2, 6, 128, 64).f(), 64 * row), 0); // seed
  EXPECT_NE(std::memcmp(whole.f(), draw(t, 2, 5, 129, 64).f(), 64 * row), 0); // samples
}

TEST(SyntheticSamples, DistributionsFollowTheInit) {
  int64_t n = 1 << 16;
  Buffer normal = draw(argument("normal", false, {n, 1}), 0, 1, 0, n);
  double sum = 0, squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(normal.f()[i]));
    sum += normal.f()[i];
    squares += double(normal.f()[i]) * normal.f()[i];
  }
  EXPECT_NEAR(sum / n, 0.0, 0.02);
  EXPECT_NEAR(squares / n, 1.0, 0.03);

  Buffer uniform = draw(argument("uniform", false, {n, 1}, -2.0, 3.0), 0, 1, 0, n);
  sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GE(uniform.f()[i], -2.0f);
    ASSERT_LT(uniform.f()[i], 3.0f);
    sum += uniform.f()[i];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.03);

  Buffer labels = draw(argument("randint", true, {n}, 10), 0, 1, 0, n);
  std::vector<int64_t> counts(10, 0);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_GE(labels.i()[i], 0);
    ASSERT_LT(labels.i()[i], 10);
    ++counts[labels.i()[i]];
  }
  for (int64_t c : counts)
    EXPECT_NEAR(double(c) / n, 0.1, 0.01);

  Buffer zeros = draw(argument("zeros", false, {4, 4}), 0, 1, 0, 4);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(zeros.f()[i], 0.0f);
}

} // namespace
