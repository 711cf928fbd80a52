//===- ConvKernels.cpp - 2-D convolution and pooling over NCHW --------------===//
//
// The three convolution kernels share one loop nest (`forEachTap`) over
// (batch, output channel, output pixel, input channel of the group, filter
// tap), so forward and both gradients agree on every index by construction.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <limits>
#include <utility>
#include <vector>

namespace het::eval {

namespace {

struct ConvDims {
  int64_t N, C, H, W, O, KH, KW, OH, OW, groupInputs, groupOutputs;
};

ConvDims convDims(const Shape &x, const Shape &w, const ConvGeometry &g) {
  ConvDims d{};
  d.N = x[0]; d.C = x[1]; d.H = x[2]; d.W = x[3];
  d.O = w[0]; d.KH = w[2]; d.KW = w[3];
  d.OH = (d.H + 2 * g.padding[0] - g.dilation[0] * (d.KH - 1) - 1) / g.strides[0] + 1;
  d.OW = (d.W + 2 * g.padding[1] - g.dilation[1] * (d.KW - 1) - 1) / g.strides[1] + 1;
  d.groupInputs = d.C / g.groups;
  d.groupOutputs = d.O / g.groups;
  return d;
}

/// The in-bounds taps of one output row or column: (tap, input offset)
/// pairs in tap order, for every output position along that axis.
struct AxisTaps {
  std::vector<int64_t> begin;                     // per output position
  std::vector<std::pair<int64_t, int64_t>> taps; // (kernel index, input index)
};

AxisTaps axisTaps(int64_t outputs, int64_t kernel, int64_t input, int64_t stride,
                  int64_t padding, int64_t dilation) {
  AxisTaps a;
  for (int64_t out = 0; out < outputs; ++out) {
    a.begin.push_back(static_cast<int64_t>(a.taps.size()));
    for (int64_t k = 0; k < kernel; ++k) {
      int64_t in = out * stride - padding + k * dilation;
      if (in >= 0 && in < input)
        a.taps.emplace_back(k, in);
    }
  }
  a.begin.push_back(static_cast<int64_t>(a.taps.size()));
  return a;
}

/// Calls f(outputIndex, inputIndex, filterIndex) for every in-bounds tap,
/// in the order (batch, output channel, output pixel, input channel of the
/// group, filter row, filter column); the bounds are worked out once per
/// output row and column, not per tap (the evaluator's convolutions are
/// what the f64 checks of whole CNNs spend their time in).
template <typename F> void forEachTap(const ConvDims &d, const ConvGeometry &g, F f) {
  AxisTaps rows = axisTaps(d.OH, d.KH, d.H, g.strides[0], g.padding[0], g.dilation[0]);
  AxisTaps cols = axisTaps(d.OW, d.KW, d.W, g.strides[1], g.padding[1], g.dilation[1]);
  for (int64_t n = 0; n < d.N; ++n)
    for (int64_t o = 0; o < d.O; ++o) {
      int64_t group = o / d.groupOutputs;
      for (int64_t oh = 0; oh < d.OH; ++oh)
        for (int64_t ow = 0; ow < d.OW; ++ow) {
          int64_t outIndex = ((n * d.O + o) * d.OH + oh) * d.OW + ow;
          for (int64_t c = 0; c < d.groupInputs; ++c) {
            int64_t channel = group * d.groupInputs + c;
            int64_t inPlane = (n * d.C + channel) * d.H * d.W;
            int64_t filterPlane = (o * d.groupInputs + c) * d.KH * d.KW;
            for (int64_t r = rows.begin[oh]; r < rows.begin[oh + 1]; ++r) {
              auto [kh, ih] = rows.taps[r];
              int64_t inRow = inPlane + ih * d.W, filterRow = filterPlane + kh * d.KW;
              for (int64_t q = cols.begin[ow]; q < cols.begin[ow + 1]; ++q) {
                auto [kw, iw] = cols.taps[q];
                f(outIndex, inRow + iw, filterRow + kw);
              }
            }
          }
        }
    }
}

} // namespace

template <typename T>
Tensor<T> conv2d(const Tensor<T> &x, const Tensor<T> &w, const Tensor<T> *bias,
                 const ConvGeometry &g) {
  ConvDims d = convDims(x.shape, w.shape, g);
  Tensor<T> y({d.N, d.O, d.OH, d.OW}, T(0));
  forEachTap(d, g, [&](int64_t out, int64_t in, int64_t filter) {
    y[out] += x[in] * w[filter];
  });
  if (bias)
    for (int64_t i = 0; i < y.size(); ++i)
      y[i] += (*bias)[(i / (d.OH * d.OW)) % d.O];
  return y;
}

template <typename T>
Tensor<T> conv2dGradInput(const Tensor<T> &dy, const Tensor<T> &w,
                          const Shape &inputShape, const ConvGeometry &g) {
  ConvDims d = convDims(inputShape, w.shape, g);
  Tensor<T> dx(inputShape, T(0));
  forEachTap(d, g, [&](int64_t out, int64_t in, int64_t filter) {
    dx[in] += dy[out] * w[filter];
  });
  return dx;
}

template <typename T>
Tensor<T> conv2dGradFilter(const Tensor<T> &dy, const Tensor<T> &x,
                           const Shape &filterShape, const ConvGeometry &g) {
  ConvDims d = convDims(x.shape, filterShape, g);
  Tensor<T> dw(filterShape, T(0));
  forEachTap(d, g, [&](int64_t out, int64_t in, int64_t filter) {
    dw[filter] += dy[out] * x[in];
  });
  return dw;
}

namespace {

/// Calls f(outIndex, window) where window lists the in-bounds input indices
/// of that output pixel in (kh, kw) order.
template <typename F>
void forEachWindow(const Shape &x, const PoolGeometry &g, F f) {
  int64_t N = x[0], C = x[1], H = x[2], W = x[3];
  int64_t OH = (H + 2 * g.padding[0] - g.kernel[0]) / g.strides[0] + 1;
  int64_t OW = (W + 2 * g.padding[1] - g.kernel[1]) / g.strides[1] + 1;
  std::vector<int64_t> window;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        window.clear();
        for (int64_t kh = 0; kh < g.kernel[0]; ++kh) {
          int64_t ih = oh * g.strides[0] - g.padding[0] + kh;
          if (ih < 0 || ih >= H)
            continue;
          for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
            int64_t iw = ow * g.strides[1] - g.padding[1] + kw;
            if (iw >= 0 && iw < W)
              window.push_back((nc * H + ih) * W + iw);
          }
        }
        f((nc * OH + oh) * OW + ow, window);
      }
}

Shape pooledShape(const Shape &x, const PoolGeometry &g) {
  return {x[0], x[1], (x[2] + 2 * g.padding[0] - g.kernel[0]) / g.strides[0] + 1,
          (x[3] + 2 * g.padding[1] - g.kernel[1]) / g.strides[1] + 1};
}

} // namespace

template <typename T> Tensor<T> maxPool2d(const Tensor<T> &x, const PoolGeometry &g) {
  Tensor<T> y(pooledShape(x.shape, g));
  forEachWindow(x.shape, g, [&](int64_t out, const std::vector<int64_t> &window) {
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t in : window)
      best = x[in] > best ? x[in] : best;
    y[out] = best;
  });
  return y;
}

template <typename T> Tensor<T> avgPool2d(const Tensor<T> &x, const PoolGeometry &g) {
  Tensor<T> y(pooledShape(x.shape, g));
  forEachWindow(x.shape, g, [&](int64_t out, const std::vector<int64_t> &window) {
    T sum = T(0);
    for (int64_t in : window)
      sum += x[in];
    y[out] = window.empty() ? T(0) : sum / T(window.size());
  });
  return y;
}

template <typename T>
Tensor<T> maxPool2dGrad(const Tensor<T> &dy, const Tensor<T> &x, const PoolGeometry &g) {
  Tensor<T> dx(x.shape, T(0));
  forEachWindow(x.shape, g, [&](int64_t out, const std::vector<int64_t> &window) {
    if (window.empty())
      return;
    int64_t first = window.front(); // the first maximum gets the gradient
    for (int64_t in : window)
      if (x[in] > x[first])
        first = in;
    dx[first] += dy[out];
  });
  return dx;
}

template <typename T>
Tensor<T> avgPool2dGrad(const Tensor<T> &dy, const Shape &inputShape,
                        const PoolGeometry &g) {
  Tensor<T> dx(inputShape, T(0));
  forEachWindow(inputShape, g, [&](int64_t out, const std::vector<int64_t> &window) {
    for (int64_t in : window)
      dx[in] += dy[out] / T(window.size());
  });
  return dx;
}

#define HET_INSTANTIATE(T)                                                        \
  template Tensor<T> conv2d(const Tensor<T> &, const Tensor<T> &, const Tensor<T> *, \
                            const ConvGeometry &);                                \
  template Tensor<T> conv2dGradInput(const Tensor<T> &, const Tensor<T> &,        \
                                     const Shape &, const ConvGeometry &);        \
  template Tensor<T> conv2dGradFilter(const Tensor<T> &, const Tensor<T> &,       \
                                      const Shape &, const ConvGeometry &);       \
  template Tensor<T> maxPool2d(const Tensor<T> &, const PoolGeometry &);          \
  template Tensor<T> avgPool2d(const Tensor<T> &, const PoolGeometry &);          \
  template Tensor<T> maxPool2dGrad(const Tensor<T> &, const Tensor<T> &,          \
                                   const PoolGeometry &);                         \
  template Tensor<T> avgPool2dGrad(const Tensor<T> &, const Shape &,              \
                                   const PoolGeometry &);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
