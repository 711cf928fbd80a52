//===- PoolingKernels.cpp - max pooling straight on the buffers ------------===//
//
// oneDNN's max-pooling backward needs the workspace of its own forward,
// which the IR does not carry (het.max_pool2d_grad gets the input instead),
// so max pooling is het's own: the evaluator's semantics (windows clipped to
// the input, the first maximum wins in row-major window order) in loops
// that work on the buffers directly instead of on copies.
//
//===----------------------------------------------------------------------===//

#include "KernelCall.h"

#include <limits>

using het::rt::KernelCall;

namespace {

struct Geometry {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  explicit Geometry(const KernelCall &c, const std::vector<int64_t> &in,
                    const std::vector<int64_t> &out) {
    planes = in[0] * in[1];
    h = in[2];
    w = in[3];
    oh = out[2];
    ow = out[3];
    kh = c.attribute(0);
    kw = c.attribute(1);
    sh = c.attribute(2);
    sw = c.attribute(3);
    ph = c.attribute(4);
    pw = c.attribute(5);
  }
  /// Calls f(outIndex, argmaxIndex) for every output element with a
  /// non-empty window, `argmax` the first maximum of plane `x`.
  template <typename F> void forEachArgmax(const float *x, F f) const {
    for (int64_t p = 0; p < planes; ++p) {
      const float *plane = x + p * h * w;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t best = -1;
          for (int64_t a = 0; a < kh; ++a) {
            int64_t r = i * sh - ph + a;
            if (r < 0 || r >= h)
              continue;
            for (int64_t b = 0; b < kw; ++b) {
              int64_t col = j * sw - pw + b;
              if (col < 0 || col >= w)
                continue;
              int64_t at = r * w + col;
              if (best < 0 || plane[at] > plane[best])
                best = at;
            }
          }
          f((p * oh + i) * ow + j, best < 0 ? -1 : p * h * w + best);
        }
    }
  }
};

} // namespace

extern "C" void hetrt_ref_max_pool2d(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  Geometry g(c, c.operandShape(0), c.resultShape(0));
  const float *x = c.operand(0);
  float *y = c.result(0);
  g.forEachArgmax(x, [&](int64_t out, int64_t in) {
    y[out] = in < 0 ? -std::numeric_limits<float>::infinity() : x[in];
  });
}

/// Operands: dy, x; result: dx.
extern "C" void hetrt_ref_max_pool2d_grad(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  Geometry g(c, c.operandShape(1), c.operandShape(0));
  const float *dy = c.operand(0), *x = c.operand(1);
  float *dx = c.result(0);
  for (int64_t i = 0, n = het::rt::product(c.resultShape(0)); i < n; ++i)
    dx[i] = 0.0f;
  g.forEachArgmax(x, [&](int64_t out, int64_t in) {
    if (in >= 0)
      dx[in] += dy[out];
  });
}
