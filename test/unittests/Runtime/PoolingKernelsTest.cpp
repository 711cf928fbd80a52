//===- PoolingKernelsTest.cpp - libhetrt's pooling in both layouts --------===//
//
// hetrt_ref_{max,avg}_pool2d and their gradients, called as generated code
// calls them, against the evaluator's kernels (the ops' semantics), bit for
// bit: every buffer row-major or channel-blocked (ChannelBlock.h) in every
// combination, disjoint 2x2 windows and overlapping padded 3x3 ones, inputs
// full of ties (small integers: the first maximum of a window gets the
// gradient) and a NaN, on one thread and on two.
//
//===----------------------------------------------------------------------===//

#include "Eval/Kernels.h" // lib/ is on this test's include path
#include "Runtime/ChannelBlock.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

extern "C" void hetrt_ref_max_pool2d(const int64_t *meta, void *const *buffers);
extern "C" void hetrt_ref_max_pool2d_grad(const int64_t *meta, void *const *buffers);
extern "C" void hetrt_ref_avg_pool2d(const int64_t *meta, void *const *buffers);
extern "C" void hetrt_ref_avg_pool2d_grad(const int64_t *meta, void *const *buffers);

namespace {

using het::eval::PoolGeometry;
using het::eval::Shape;
using het::eval::Tensor;
using het::rt::BufferLayout;
using het::rt::PlaneLayout;

/// A buffer of the call: its shape and whether it is channel-blocked.
struct Buffer {
  Shape shape;
  bool blocked;
};

std::vector<int64_t> meta(const std::vector<Buffer> &operands, const std::vector<Buffer> &results,
                          const PoolGeometry &g) {
  std::vector<int64_t> words{static_cast<int64_t>(operands.size()),
                             static_cast<int64_t>(results.size())};
  for (const auto *list : {&operands, &results})
    for (const Buffer &buffer : *list) {
      words.push_back(static_cast<int64_t>(buffer.shape.size()) |
                      (buffer.blocked ? int64_t{1} << 32 : 0));
      words.insert(words.end(), buffer.shape.begin(), buffer.shape.end());
    }
  for (const auto &pair : {g.kernel, g.strides, g.padding})
    words.insert(words.end(), pair.begin(), pair.end());
  return words;
}

/// `t` (row-major NCHW) in the layout of `buffer`.
std::vector<float> stored(const Tensor<float> &t, bool blocked) {
  PlaneLayout layout(t.shape, blocked ? BufferLayout::ChannelBlocked : BufferLayout::RowMajor);
  std::vector<float> out(t.data.size());
  int64_t n = t.shape[0], c = t.shape[1], h = t.shape[2], w = t.shape[3];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          out[layout.plane(i, j) + y * layout.rowStride() + x * layout.columnStride()] =
              t.data[((i * c + j) * h + y) * w + x];
  return out;
}

/// Back to row-major.
Tensor<float> loaded(const std::vector<float> &data, const Shape &shape, bool blocked) {
  PlaneLayout layout(shape, blocked ? BufferLayout::ChannelBlocked : BufferLayout::RowMajor);
  Tensor<float> t(shape);
  int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          t.data[((i * c + j) * h + y) * w + x] =
              data[layout.plane(i, j) + y * layout.rowStride() + x * layout.columnStride()];
  return t;
}

/// Same bits (NaN equal to NaN).
void expectSameBits(const Tensor<float> &expected, const Tensor<float> &actual,
                    const std::string &what) {
  ASSERT_EQ(expected.data.size(), actual.data.size()) << what;
  for (size_t i = 0; i < expected.data.size(); ++i)
    ASSERT_EQ(std::memcmp(&expected.data[i], &actual.data[i], sizeof(float)), 0)
        << what << ": element " << i << " is " << actual.data[i] << ", expected "
        << expected.data[i];
}

struct Case {
  const char *name;
  PoolGeometry geometry;
  Shape input, output;
};

class PoolingLayouts : public ::testing::TestWithParam<Case> {};

TEST_P(PoolingLayouts, MatchesEvaluatorInEveryLayoutCombination) {
  const Case &c = GetParam();
  std::mt19937 generator(11);
  std::uniform_int_distribution<int> small(0, 2); // ties in most windows
  Tensor<float> x(c.input), dy(c.output);
  for (float &v : x.data)
    v = static_cast<float>(small(generator));
  for (float &v : dy.data)
    v = static_cast<float>(small(generator)) - 0.75f;
  x.data[5] = std::numeric_limits<float>::quiet_NaN(); // a window's first element

  Tensor<float> y = het::eval::maxPool2d(x, c.geometry);
  Tensor<float> dx = het::eval::maxPool2dGrad(dy, x, c.geometry);
  Tensor<float> avg = het::eval::avgPool2d(x, c.geometry);
  Tensor<float> avgDx = het::eval::avgPool2dGrad(dy, c.input, c.geometry);

  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (int mask = 0; mask < 8; ++mask) {
      bool xBlocked = mask & 1, yBlocked = mask & 2, dxBlocked = mask & 4;
      std::string what = std::string(c.name) + " x " + (xBlocked ? "blocked" : "plain") +
                          ", y/dy " + (yBlocked ? "blocked" : "plain") + ", dx " +
                          (dxBlocked ? "blocked" : "plain") + ", threads " +
                          std::to_string(threads);
      std::vector<float> xs = stored(x, xBlocked), dys = stored(dy, yBlocked);
      std::vector<float> ys(y.data.size()), dxs(x.data.size());

      auto forward = meta({{c.input, xBlocked}}, {{c.output, yBlocked}}, c.geometry);
      void *forwardBuffers[] = {xs.data(), ys.data()};
      hetrt_ref_max_pool2d(forward.data(), forwardBuffers);
      expectSameBits(y, loaded(ys, c.output, yBlocked), "max " + what);
      hetrt_ref_avg_pool2d(forward.data(), forwardBuffers);
      expectSameBits(avg, loaded(ys, c.output, yBlocked), "avg " + what);

      std::fill(dxs.begin(), dxs.end(), 123.0f); // the kernels write every element
      auto grad = meta({{c.output, yBlocked}, {c.input, xBlocked}}, {{c.input, dxBlocked}},
                       c.geometry);
      void *gradBuffers[] = {dys.data(), xs.data(), dxs.data()};
      hetrt_ref_max_pool2d_grad(grad.data(), gradBuffers);
      expectSameBits(dx, loaded(dxs, c.input, dxBlocked), "max grad " + what);

      std::fill(dxs.begin(), dxs.end(), 123.0f);
      auto avgGrad = meta({{c.output, yBlocked}}, {{c.input, dxBlocked}}, c.geometry);
      void *avgGradBuffers[] = {dys.data(), dxs.data()};
      hetrt_ref_avg_pool2d_grad(avgGrad.data(), avgGradBuffers);
      expectSameBits(avgDx, loaded(dxs, c.input, dxBlocked), "avg grad " + what);
    }
  }
  omp_set_num_threads(1);
}

PoolGeometry geometry(int64_t k, int64_t s, int64_t p) {
  PoolGeometry g;
  g.kernel = {k, k};
  g.strides = {s, s};
  g.padding = {p, p};
  return g;
}

INSTANTIATE_TEST_SUITE_P(
    Windows, PoolingLayouts,
    ::testing::Values(
        // Disjoint windows tiling the image (the CNN's 2x2 pooling).
        Case{"2x2 stride 2", geometry(2, 2, 0), {4, 32, 16, 16}, {4, 32, 8, 8}},
        // Overlapping, padded windows on an odd image (ResNet's stem).
        Case{"3x3 stride 2 pad 1", geometry(3, 2, 1), {2, 16, 9, 9}, {2, 16, 5, 5}},
        // Disjoint windows that leave a row and a column uncovered.
        Case{"2x2 stride 3", geometry(2, 3, 0), {2, 16, 7, 7}, {2, 16, 2, 2}},
        // Global average pooling's shape: one window over the image.
        Case{"global 6x6", geometry(6, 6, 0), {4, 16, 6, 6}, {4, 16, 1, 1}}),
    [](const ::testing::TestParamInfo<Case> &info) { return "case" + std::to_string(info.index); });

TEST(ChannelBlock, IsAOneDnnBlockDividingSixteen) {
  int64_t block = het::rt::channelBlock();
  EXPECT_TRUE(block == 8 || block == 16) << block;
}

} // namespace
