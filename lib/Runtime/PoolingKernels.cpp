//===- PoolingKernels.cpp - max and average pooling on the buffers --------===//
//
// het's own pooling, forward and backward: oneDNN's max-pooling backward
// needs the workspace of its own forward, which the IR does not carry
// (het.max_pool2d_grad gets the input instead). The semantics are the
// evaluator's (lib/Eval/ConvKernels.cpp): windows clipped to the input;
// max starts from -inf and takes a strictly greater value, its gradient
// goes to the first maximum in row-major window order; an average divides
// by the in-bounds window size and sums in that order.
//
// The loops work on the buffers in place, in either layout of each buffer
// (row-major NCHW or channel-blocked, ChannelBlock.h). When every buffer of
// the call is blocked, the innermost loops run over the b channels of a
// block, contiguous in memory, and vectorize (omp simd; float compares and
// selects only: selects on integers or short-circuit conditions became
// branches, mispredicted on every other element); otherwise one channel at
// a time. Work is split over (sample, channel group) planes on the
// executable's threads (OpenMP, shared with oneDNN); planes never overlap,
// so the result does not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#include "ChannelBlock.h"
#include "KernelCall.h"

#include <omp.h>

#include <algorithm>
#include <limits>

using het::rt::KernelCall;
using het::rt::PlaneLayout;

namespace {

struct Window {
  int64_t kh, kw, sh, sw, ph, pw;
  explicit Window(const KernelCall &c)
      : kh(c.attribute(0)), kw(c.attribute(1)), sh(c.attribute(2)), sw(c.attribute(3)),
        ph(c.attribute(4)), pw(c.attribute(5)) {}
};

/// The input rows [rowBegin, rowEnd) and columns of output (i, j)'s window.
struct Span {
  int64_t rowBegin, rowEnd, columnBegin, columnEnd;
  int64_t size() const { return (rowEnd - rowBegin) * (columnEnd - columnBegin); }
};

Span span(const Window &w, const PlaneLayout &in, int64_t i, int64_t j) {
  int64_t r = i * w.sh - w.ph, col = j * w.sw - w.pw;
  return {std::max<int64_t>(r, 0), std::min(r + w.kh, in.height), std::max<int64_t>(col, 0),
          std::min(col + w.kw, in.width)};
}

/// Calls body(n, c) for each group of `lanes` channels of each sample,
/// across the threads when there is enough work to pay for them.
template <typename Body>
void forEachPlaneGroup(int64_t samples, int64_t channels, int64_t lanes, int64_t elements,
                       Body body) {
  int64_t groups = samples * (channels / lanes);
  bool threaded = omp_get_max_threads() > 1 && !omp_in_parallel() && elements >= (1 << 15);
#pragma omp parallel for schedule(static) if (threaded)
  for (int64_t g = 0; g < groups; ++g)
    body(g / (channels / lanes), g % (channels / lanes) * lanes);
}

/// The lanes a call can run: b when all its buffers are blocked, else 1.
int64_t lanesOf(std::initializer_list<const PlaneLayout *> layouts) {
  int64_t block = (*layouts.begin())->block;
  for (const PlaneLayout *layout : layouts)
    if (layout->block != block)
      return 1;
  return block;
}

/// One plane group of max pooling over x (layout `in`). Lanes is the
/// number of channels handled together (contiguous when > 1). Forward:
/// writes each window's maximum to `result` (y, layout `out`). Grad: writes
/// `result` (dx, layout `gradIn`): dy (layout `out`) at each window's first
/// maximum, 0 elsewhere.
template <int Lanes, bool Grad>
void maxPoolGroup(const Window &w, const PlaneLayout &in, const PlaneLayout &out,
                  const PlaneLayout &gradIn, const float *x, const float *dy, float *result,
                  int64_t n, int64_t c) {
  const float *px = x + in.plane(n, c);
  const float *pdy = Grad ? dy + out.plane(n, c) : nullptr;
  float *py = Grad ? nullptr : result + out.plane(n, c);
  float *pdx = Grad ? result + gradIn.plane(n, c) : nullptr;
  bool sameLayout = gradIn.block == in.block;
  // Windows that do not overlap give each input at most one gradient: dx is
  // written window by window (dy at the maximum, 0 elsewhere), with no
  // scatter, and zeroed first only where no window covers it.
  bool disjoint = w.sh >= w.kh && w.sw >= w.kw;
  bool covering = disjoint && w.sh == w.kh && w.sw == w.kw && w.ph == 0 && w.pw == 0 &&
                  out.height * w.kh == in.height && out.width * w.kw == in.width;
  if (Grad && !(covering && sameLayout))
    for (int64_t r = 0; r < in.height; ++r)
      for (int64_t col = 0; col < in.width; ++col)
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          pdx[r * gradIn.rowStride() + col * gradIn.columnStride() + l] = 0.0f;
  for (int64_t i = 0; i < out.height; ++i)
    for (int64_t j = 0; j < out.width; ++j) {
      int64_t here = i * out.rowStride() + j * out.columnStride();
      Span s = span(w, in, i, j);
      if (s.size() <= 0) { // no input under the window
        if constexpr (!Grad)
#pragma omp simd
          for (int l = 0; l < Lanes; ++l)
            py[here + l] = -std::numeric_limits<float>::infinity();
        continue;
      }
      int64_t firstOffset = s.rowBegin * in.rowStride() + s.columnBegin * in.columnStride();
      float best[Lanes];
#pragma omp simd
      for (int l = 0; l < Lanes; ++l)
        // The gradient starts from the window's first element, the forward
        // from -inf: they differ only on NaN, as in the evaluator.
        best[l] = Grad ? px[firstOffset + l] : -std::numeric_limits<float>::infinity();
      for (int64_t r = s.rowBegin; r < s.rowEnd; ++r)
        for (int64_t col = s.columnBegin; col < s.columnEnd; ++col) {
          const float *v = px + r * in.rowStride() + col * in.columnStride();
#pragma omp simd
          for (int l = 0; l < Lanes; ++l)
            best[l] = v[l] > best[l] ? v[l] : best[l];
        }
      if (Grad && disjoint && sameLayout) {
        // The first element equal to the maximum gets dy, the rest 0: dy is
        // handed out once, then what is left to hand out is 0.
        float left[Lanes];
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          left[l] = pdy[here + l];
        for (int64_t r = s.rowBegin; r < s.rowEnd; ++r)
          for (int64_t col = s.columnBegin; col < s.columnEnd; ++col) {
            int64_t offset = r * in.rowStride() + col * in.columnStride();
#pragma omp simd
            for (int l = 0; l < Lanes; ++l) {
              float v = px[offset + l], give = left[l];
              pdx[offset + l] = v == best[l] ? give : 0.0f;
              left[l] = v == best[l] ? 0.0f : give;
            }
          }
        // A NaN maximum is a NaN first element (nothing compares greater
        // than it) and equals nothing: it gets dy, as in the evaluator.
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          pdx[firstOffset + l] = best[l] != best[l] ? left[l] : pdx[firstOffset + l];
      } else if constexpr (Grad) {
        // Overlapping windows, or dx in another layout than x: each lane's
        // first maximum gets dy added.
        for (int l = 0; l < Lanes; ++l) {
          bool done = false;
          for (int64_t r = s.rowBegin; r < s.rowEnd && !done; ++r)
            for (int64_t col = s.columnBegin; col < s.columnEnd && !done; ++col) {
              float v = px[r * in.rowStride() + col * in.columnStride() + l];
              if (v == best[l] || best[l] != best[l]) {
                pdx[r * gradIn.rowStride() + col * gradIn.columnStride() + l] += pdy[here + l];
                done = true;
              }
            }
        }
      } else {
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          py[here + l] = best[l];
      }
    }
}

/// One plane group of average pooling. Forward: `from` is x (layout `in`),
/// `to` is y (layout `out`). Grad: `from` is dy (layout `out`), `to` is dx
/// (layout `in`), zeroed, then each window gets dy / its size.
template <int Lanes, bool Grad>
void avgPoolGroup(const Window &w, const PlaneLayout &in, const PlaneLayout &out,
                  const float *from, float *to, int64_t n, int64_t c) {
  const float *pfrom = from + (Grad ? out : in).plane(n, c);
  float *pto = to + (Grad ? in : out).plane(n, c);
  if constexpr (Grad)
    for (int64_t r = 0; r < in.height; ++r)
      for (int64_t col = 0; col < in.width; ++col)
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          pto[r * in.rowStride() + col * in.columnStride() + l] = 0.0f;
  for (int64_t i = 0; i < out.height; ++i)
    for (int64_t j = 0; j < out.width; ++j) {
      int64_t here = i * out.rowStride() + j * out.columnStride();
      Span s = span(w, in, i, j);
      if (s.size() <= 0) {
        if constexpr (!Grad)
#pragma omp simd
          for (int l = 0; l < Lanes; ++l)
            pto[here + l] = 0.0f;
        continue;
      }
      float size = static_cast<float>(s.size());
      if constexpr (Grad) {
        float share[Lanes];
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          share[l] = pfrom[here + l] / size;
        for (int64_t r = s.rowBegin; r < s.rowEnd; ++r)
          for (int64_t col = s.columnBegin; col < s.columnEnd; ++col)
#pragma omp simd
            for (int l = 0; l < Lanes; ++l)
              pto[r * in.rowStride() + col * in.columnStride() + l] += share[l];
      } else {
        float sum[Lanes] = {};
        for (int64_t r = s.rowBegin; r < s.rowEnd; ++r)
          for (int64_t col = s.columnBegin; col < s.columnEnd; ++col)
#pragma omp simd
            for (int l = 0; l < Lanes; ++l)
              sum[l] += pfrom[r * in.rowStride() + col * in.columnStride() + l];
#pragma omp simd
        for (int l = 0; l < Lanes; ++l)
          pto[here + l] = sum[l] / size;
      }
    }
}

/// Runs Group<Lanes>::run(args..., n, c) over every plane group, with the
/// widest lanes the layouts allow.
template <template <int> class Group, typename... Args>
void dispatchLanes(int64_t lanes, int64_t samples, int64_t channels, int64_t elements,
                   const Args &...args) {
  auto run = [&](auto body) { forEachPlaneGroup(samples, channels, lanes, elements, body); };
  if (lanes == 16)
    run([&](int64_t n, int64_t c) { Group<16>::run(args..., n, c); });
  else if (lanes == 8)
    run([&](int64_t n, int64_t c) { Group<8>::run(args..., n, c); });
  else
    run([&](int64_t n, int64_t c) { Group<1>::run(args..., n, c); });
}

template <int Lanes> struct MaxForward {
  template <typename... Args> static void run(const Args &...args) {
    maxPoolGroup<Lanes, false>(args...);
  }
};
template <int Lanes> struct MaxBackward {
  template <typename... Args> static void run(const Args &...args) {
    maxPoolGroup<Lanes, true>(args...);
  }
};
template <int Lanes> struct AvgForward {
  template <typename... Args> static void run(const Args &...args) {
    avgPoolGroup<Lanes, false>(args...);
  }
};
template <int Lanes> struct AvgBackward {
  template <typename... Args> static void run(const Args &...args) {
    avgPoolGroup<Lanes, true>(args...);
  }
};

} // namespace

/// Operand: x; result: y.
extern "C" void hetrt_ref_max_pool2d(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  PlaneLayout x(c.operandShape(0), c.operandLayout(0));
  PlaneLayout y(c.resultShape(0), c.resultLayout(0));
  const float *none = nullptr;
  dispatchLanes<MaxForward>(lanesOf({&x, &y}), c.operandShape(0)[0], x.channels,
                            het::rt::product(c.operandShape(0)), Window(c), x, y, x,
                            static_cast<const float *>(c.operand(0)), none, c.result(0));
}

/// Operands: dy, x; result: dx.
extern "C" void hetrt_ref_max_pool2d_grad(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  PlaneLayout dy(c.operandShape(0), c.operandLayout(0));
  PlaneLayout x(c.operandShape(1), c.operandLayout(1));
  PlaneLayout dx(c.resultShape(0), c.resultLayout(0));
  dispatchLanes<MaxBackward>(lanesOf({&dy, &x, &dx}), c.operandShape(1)[0], x.channels,
                             het::rt::product(c.operandShape(1)), Window(c), x, dy, dx,
                             static_cast<const float *>(c.operand(1)),
                             static_cast<const float *>(c.operand(0)), c.result(0));
}

/// Operand: x; result: y.
extern "C" void hetrt_ref_avg_pool2d(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  PlaneLayout x(c.operandShape(0), c.operandLayout(0));
  PlaneLayout y(c.resultShape(0), c.resultLayout(0));
  dispatchLanes<AvgForward>(lanesOf({&x, &y}), c.operandShape(0)[0], x.channels,
                            het::rt::product(c.operandShape(0)), Window(c), x, y,
                            static_cast<const float *>(c.operand(0)), c.result(0));
}

/// Operand: dy; result: dx.
extern "C" void hetrt_ref_avg_pool2d_grad(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  PlaneLayout dy(c.operandShape(0), c.operandLayout(0));
  PlaneLayout dx(c.resultShape(0), c.resultLayout(0));
  dispatchLanes<AvgBackward>(lanesOf({&dy, &dx}), c.resultShape(0)[0], dx.channels,
                             het::rt::product(c.resultShape(0)), Window(c), dx, dy,
                             static_cast<const float *>(c.operand(0)), c.result(0));
}
