//===- DnnlKernels.cpp - hetrt_dnnl_*: oneDNN primitives ------------------===//
//
// Dense layers, convolutions and batch normalization on oneDNN (v2.6 API).
// Shapes are fixed per call site, so each site's primitives are created
// once and kept, keyed by the site's constant meta array. Matmuls use het's
// buffers in place (row-major, [out, in] weights). Convolutions and batch
// norm run on channel-blocked data (oneDNN's plain-layout convolutions fall
// back to slow GEMM code, its plain batch norm to generic loops): an
// activation het-compile marked channel-blocked (ChannelBlock.h) is used
// as it is, a row-major one (NCHW) is reordered in and out through a
// buffer kept with the site, as are the weights (OIHW).
//
// Batch norm + ReLU runs forward with oneDNN's fuse_norm_relu, which also
// writes a workspace (the ReLU mask). The IR hands the fused gradient the
// forward's output, not the workspace, so the runtime finds the workspace
// by the output's address (registered by the forward, taken once by the
// backward) and runs oneDNN's fused backward; when the address is unknown
// (the output was copied) it masks dy by output > 0, the reference's test,
// and runs the plain backward.
//
//===----------------------------------------------------------------------===//

#include "ChannelBlock.h"
#include "GemmEngines.h"
#include "MatmulPadding.h"
#include "KernelCall.h"

#include "Types/DataType.h" // hetccl: the bf16 conversions

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

using het::rt::BufferLayout;
using het::rt::ElementFormat;
using het::rt::KernelCall;
using het::rt::product;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

namespace {

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream &stream() {
  static dnnl::stream s(engine());
  return s;
}

/// oneDNN's data type of a buffer in the format the call's meta gives
/// (mixed precision: bf16 and f16 products and convolutions accumulate in
/// f32 inside the primitive and round their outputs).
dt typeOf(ElementFormat format) {
  switch (format) {
  case ElementFormat::BF16:
    return dt::bf16;
  case ElementFormat::F16:
    return dt::f16;
  case ElementFormat::F32:
    break;
  }
  return dt::f32;
}

dnnl::memory::desc plain(const dims &d, const dims &strides, dt type = dt::f32) {
  return dnnl::memory::desc(d, type, strides);
}
dnnl::memory::desc rowMajor(const dims &d, dt type = dt::f32) {
  dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * d[i + 1];
  return plain(d, strides, type);
}
dnnl::memory wrap(const dnnl::memory::desc &md, void *p) {
  return dnnl::memory(md, engine(), p);
}

/// The channel-blocked format of this process (ChannelBlock.h).
tag blockedTag() { return het::rt::channelBlock() == 16 ? tag::nChw16c : tag::nChw8c; }

/// How het stores an activation buffer: [N, C] or NCHW row-major, or
/// NCHW channel-blocked where the call's meta says so.
dnnl::memory::desc activation(const std::vector<int64_t> &shape, BufferLayout layout,
                              dt type = dt::f32) {
  dims d(shape.begin(), shape.end());
  if (d.size() != 4)
    return dnnl::memory::desc(d, type, d.size() == 2 ? tag::nc : tag::x);
  return dnnl::memory::desc(d, type,
                            layout == BufferLayout::ChannelBlocked ? blockedTag() : tag::nchw);
}

/// A tensor handed to a primitive in the layout the primitive chose
/// (blocked, e.g. nChw16c, for the JIT convolutions): reordered from het's
/// plain layout on the way in, back on the way out, through a buffer kept
/// with the call site. No reorder when the layouts agree.
struct Staging {
  dnnl::memory::desc user, inner;
  bool reorder = false;
  std::unique_ptr<void, decltype(&std::free)> buffer{nullptr, &std::free};
  dnnl::primitive toInner, toUser;

  void init(const dnnl::memory::desc &userDesc, const dnnl::memory::desc &innerDesc) {
    user = userDesc;
    inner = innerDesc;
    reorder = user != inner;
    if (!reorder)
      return;
    buffer.reset(std::aligned_alloc(64, (inner.get_size() + 63) / 64 * 64));
    toInner = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), inner));
    toUser = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), inner, engine(), user));
  }
  /// The memory to pass for an input stored at `p`.
  dnnl::memory input(void *p) {
    dnnl::memory plainMemory(user, engine(), p);
    if (!reorder)
      return plainMemory;
    dnnl::memory staged(inner, engine(), buffer.get());
    toInner.execute(stream(), {{DNNL_ARG_FROM, plainMemory}, {DNNL_ARG_TO, staged}});
    return staged;
  }
  /// The memory to pass for an output that belongs at `p`; call
  /// `finish(p)` after the primitive ran.
  dnnl::memory output(void *p) {
    return reorder ? dnnl::memory(inner, engine(), buffer.get()) : dnnl::memory(user, engine(), p);
  }
  void finish(void *p) {
    if (reorder)
      toUser.execute(stream(), {{DNNL_ARG_FROM, dnnl::memory(inner, engine(), buffer.get())},
                                {DNNL_ARG_TO, dnnl::memory(user, engine(), p)}});
  }
};

/// One primitive set per call site.
struct Site {
  std::vector<dnnl::primitive> primitives;
  std::vector<dnnl::memory::desc> descs;
  std::vector<float> scratch, scratch2, scratch3;
  std::vector<uint8_t> workspace;
  Staging staged[4];
};

template <typename Build> Site &site(const int64_t *meta, Build build) {
  static std::unordered_map<const int64_t *, std::unique_ptr<Site>> sites;
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  auto &slot = sites[meta];
  if (!slot) {
    slot = std::make_unique<Site>();
    build(*slot);
  }
  return *slot;
}

/// Matmul of row-major [.., M, K] x [.., K, N] where either side may be
/// stored transposed; batch dims broadcast (size 1).
struct MatmulShape {
  dims a, aStrides, b, bStrides, c;
  dt aType = dt::f32, bType = dt::f32, cType = dt::f32; // the buffers' formats
};

MatmulShape matmulShape(std::vector<int64_t> lhs, std::vector<int64_t> rhs, bool tl, bool tr) {
  size_t rank = std::max(lhs.size(), rhs.size());
  while (lhs.size() < rank)
    lhs.insert(lhs.begin(), 1);
  while (rhs.size() < rank)
    rhs.insert(rhs.begin(), 1);
  auto stridesOf = [](const std::vector<int64_t> &s) {
    dims st(s.size(), 1);
    for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i)
      st[i] = st[i + 1] * s[i + 1];
    return st;
  };
  MatmulShape m;
  m.a = dims(lhs.begin(), lhs.end());
  m.aStrides = stridesOf(lhs);
  m.b = dims(rhs.begin(), rhs.end());
  m.bStrides = stridesOf(rhs);
  if (tl) {
    std::swap(m.a[rank - 1], m.a[rank - 2]);
    std::swap(m.aStrides[rank - 1], m.aStrides[rank - 2]);
  }
  if (tr) {
    std::swap(m.b[rank - 1], m.b[rank - 2]);
    std::swap(m.bStrides[rank - 1], m.bStrides[rank - 2]);
  }
  for (size_t d = 0; d + 2 < rank; ++d) {
    // oneDNN broadcasts a size-1 batch dim only with stride 0-free layouts;
    // plain strides are fine.
    m.c.push_back(std::max(m.a[d], m.b[d]));
  }
  m.c.push_back(m.a[rank - 2]);
  m.c.push_back(m.b[rank - 1]);
  return m;
}

dnnl::primitive buildMatmul(const MatmulShape &m, const dnnl::memory::desc *bias,
                            const dnnl::post_ops &post = dnnl::post_ops()) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(post);
  auto a = plain(m.a, m.aStrides, m.aType), b = plain(m.b, m.bStrides, m.bType),
       c = rowMajor(m.c, m.cType);
  auto desc = bias ? dnnl::matmul::desc(a, b, *bias, c) : dnnl::matmul::desc(a, b, c);
  return dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, engine()));
}

void runMatmul(Site &s, size_t index, const MatmulShape &m, void *a, void *b, void *c,
               void *bias = nullptr, const dnnl::memory::desc *biasDesc = nullptr) {
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, wrap(plain(m.a, m.aStrides, m.aType), a)},
      {DNNL_ARG_WEIGHTS, wrap(plain(m.b, m.bStrides, m.bType), b)},
      {DNNL_ARG_DST, wrap(rowMajor(m.c, m.cType), c)}};
  if (bias)
    args.emplace(DNNL_ARG_BIAS, wrap(*biasDesc, bias));
  s.primitives[index].execute(stream(), args);
  stream().wait();
}

int64_t leading(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i)
    n *= shape[i];
  return n;
}

struct Conv {
  dims src, weights, dst, strides, dilation, padding;
  dnnl::memory::desc srcMd, weightsMd, dstMd;
  dt type = dt::f32;
};

/// x and y with their layouts in het's buffers.
Conv convShape(const KernelCall &c, const std::vector<int64_t> &x, BufferLayout xLayout,
               const std::vector<int64_t> &w, const std::vector<int64_t> &y,
               BufferLayout yLayout) {
  Conv v;
  int64_t groups = c.attribute(6);
  v.src = dims(x.begin(), x.end());
  v.dst = dims(y.begin(), y.end());
  v.strides = {c.attribute(0), c.attribute(1)};
  v.padding = {c.attribute(2), c.attribute(3)};
  v.dilation = {c.attribute(4) - 1, c.attribute(5) - 1};
  // One format for the call (het-autocast casts a convolution's operands
  // alike, and autodiff builds its gradients from them).
  v.type = typeOf(c.formats.front());
  v.srcMd = activation(x, xLayout, v.type);
  v.dstMd = activation(y, yLayout, v.type);
  if (groups == 1) {
    v.weights = dims(w.begin(), w.end());
    v.weightsMd = dnnl::memory::desc(v.weights, v.type, tag::oihw);
  } else {
    v.weights = {groups, w[0] / groups, w[1], w[2], w[3]};
    v.weightsMd = dnnl::memory::desc(v.weights, v.type, tag::goihw);
  }
  return v;
}

dnnl::memory::desc anyLayout(const dims &d, dt type = dt::f32) {
  return dnnl::memory::desc(d, type, tag::any);
}

dnnl::convolution_forward::primitive_desc convForwardPd(const Conv &v, bool withBias) {
  auto biasMd = dnnl::memory::desc({v.weights.size() == 5 ? v.weights[0] * v.weights[1]
                                                           : v.weights[0]},
                                   v.type, tag::x);
  auto desc = withBias ? dnnl::convolution_forward::desc(
                             dnnl::prop_kind::forward_training,
                             dnnl::algorithm::convolution_direct, anyLayout(v.src, v.type),
                             anyLayout(v.weights, v.type), biasMd, anyLayout(v.dst, v.type),
                             v.strides, v.dilation, v.padding, v.padding)
                       : dnnl::convolution_forward::desc(
                             dnnl::prop_kind::forward_training,
                             dnnl::algorithm::convolution_direct, anyLayout(v.src, v.type),
                             anyLayout(v.weights, v.type), anyLayout(v.dst, v.type), v.strides,
                             v.dilation, v.padding, v.padding);
  return dnnl::convolution_forward::primitive_desc(desc, engine());
}

/// oneDNN's JIT batch norm wants channel-blocked data; on plain NCHW it
/// runs generic code several times slower, which costs more than the two
/// reorders around the blocked kernel (none when het-compile kept the data
/// blocked).
dnnl::memory::desc bnInner(const std::vector<int64_t> &x) {
  dims d(x.begin(), x.end());
  if (x.size() != 4)
    return dnnl::memory::desc(d, dt::f32, tag::nc);
  if (x[1] % het::rt::channelBlock() == 0)
    return dnnl::memory::desc(d, dt::f32, blockedTag());
  if (x[1] % 8 == 0)
    return dnnl::memory::desc(d, dt::f32, tag::nChw8c);
  return dnnl::memory::desc(d, dt::f32, tag::nchw);
}

const dnnl::normalization_flags kScaleShift =
    dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

/// Fused forwards' ReLU masks by output address; see the file comment.
struct ReluMask {
  Site *site;
  int64_t count;
};
std::unordered_map<const void *, ReluMask> &reluMasks() {
  static std::unordered_map<const void *, ReluMask> masks;
  return masks;
}

void batchNormForward(const int64_t *meta, void *const *buffers, bool relu) {
  KernelCall c(meta, buffers);
  double epsilon = c.floatAttribute(0);
  auto inner = bnInner(c.operandShape(0));
  int64_t channels = c.operandShape(0)[1];
  auto flags = kScaleShift | dnnl::normalization_flags::none;
  if (relu)
    flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  dnnl::batch_normalization_forward::primitive_desc pd;
  Site &s = site(meta, [&](Site &s) {
    auto desc = dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, inner,
                                                        static_cast<float>(epsilon), flags);
    auto p = dnnl::batch_normalization_forward::primitive_desc(desc, engine());
    s.primitives.push_back(dnnl::batch_normalization_forward(p));
    s.staged[0].init(activation(c.operandShape(0), c.operandLayout(0)), inner);
    s.staged[1].init(activation(c.resultShape(0), c.resultLayout(0)), inner);
    s.descs.push_back(p.workspace_desc());
    s.scratch.resize(channels); // variance
    s.workspace.resize(p.workspace_desc().get_size());
  });
  auto vec = dnnl::memory::desc({channels}, dt::f32, tag::x);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, s.staged[0].input(c.operand(0))},
      {DNNL_ARG_SCALE, wrap(vec, c.operand(1))},
      {DNNL_ARG_SHIFT, wrap(vec, c.operand(2))},
      {DNNL_ARG_DST, s.staged[1].output(c.result(0))},
      {DNNL_ARG_MEAN, wrap(vec, c.result(1))},
      {DNNL_ARG_VARIANCE, wrap(vec, s.scratch.data())}};
  if (relu)
    args.emplace(DNNL_ARG_WORKSPACE, wrap(s.descs[0], s.workspace.data()));
  s.primitives[0].execute(stream(), args);
  s.staged[1].finish(c.result(0));
  stream().wait();
  if (relu)
    reluMasks()[c.result(0)] = ReluMask{&s, product(c.operandShape(0))};
  for (int64_t k = 0; k < channels; ++k)
    c.result(2)[k] = 1.0f / std::sqrt(s.scratch[k] + static_cast<float>(epsilon));
}

/// out = y > 0 ? dy : 0. Written to vectorize (no aliasing, a select, not
/// a branch): half of a ReLU's outputs are 0 in no pattern, and a branch
/// per element would mispredict half the time.
void maskByPositive(float *__restrict out, const float *__restrict dy, const float *__restrict y,
                    int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    out[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/// Operands: dy, [relu output], x, gamma, mean, invstd.
void batchNormBackward(const int64_t *meta, void *const *buffers, bool relu) {
  KernelCall c(meta, buffers);
  int first = relu ? 2 : 1; // index of x
  auto inner = bnInner(c.operandShape(first));
  int64_t channels = c.operandShape(first)[1];
  int64_t count = product(c.operandShape(first));
  Site &s = site(meta, [&](Site &s) {
    // oneDNN's epsilon is folded into the variance we hand over below.
    auto forward = dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training,
                                                           inner, 0.0f, kScaleShift);
    auto forwardPd = dnnl::batch_normalization_forward::primitive_desc(forward, engine());
    auto desc = dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, inner, inner,
                                                         0.0f, kScaleShift);
    auto p = dnnl::batch_normalization_backward::primitive_desc(desc, engine(), forwardPd);
    s.primitives.push_back(dnnl::batch_normalization_backward(p));
    if (relu) {
      // The fused backward, which applies the forward's workspace mask.
      auto fusedFlags = kScaleShift | dnnl::normalization_flags::fuse_norm_relu;
      auto fusedForward = dnnl::batch_normalization_forward::primitive_desc(
          dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, inner, 0.0f,
                                                  fusedFlags),
          engine());
      auto fused = dnnl::batch_normalization_backward::primitive_desc(
          dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, inner, inner, 0.0f,
                                                   fusedFlags),
          engine(), fusedForward);
      s.primitives.push_back(dnnl::batch_normalization_backward(fused));
      s.descs.push_back(fused.workspace_desc());
    }
    auto dyLayout = activation(c.operandShape(0), c.operandLayout(0));
    s.staged[0].init(activation(c.operandShape(first), c.operandLayout(first)), inner); // x
    s.staged[1].init(dyLayout, inner);                                                 // dy
    s.staged[2].init(activation(c.resultShape(0), c.resultLayout(0)), inner);          // dx
    s.scratch.resize(channels);
    s.scratch3.assign(channels, 0.0f); // the shift: unused by the gradient, required by oneDNN
    if (relu) {
      s.scratch2.resize(count);
      // Masking by y without the forward's workspace needs y in dy's layout.
      s.staged[3].init(activation(c.operandShape(1), c.operandLayout(1)), dyLayout);
    }
  });
  // variance + eps = 1 / invstd^2, so oneDNN (with eps 0) sees the same
  // 1/sqrt(var + eps) the forward used.
  const float *invStd = c.operand(first + 3);
  for (int64_t k = 0; k < channels; ++k)
    s.scratch[k] = 1.0f / (invStd[k] * invStd[k]);
  float *dy = c.operand(0);
  Site *forward = nullptr;
  if (relu) {
    auto it = reluMasks().find(c.operand(1));
    if (it != reluMasks().end() && it->second.count == count &&
        it->second.site->descs[0] == s.descs[0]) {
      forward = it->second.site;
      reluMasks().erase(it); // one backward per forward
    } else {
      auto y = s.staged[3].input(c.operand(1)); // y in dy's layout
      stream().wait();
      maskByPositive(s.scratch2.data(), dy, static_cast<const float *>(y.get_data_handle()),
                     count);
      dy = s.scratch2.data();
    }
  }
  auto vec = dnnl::memory::desc({channels}, dt::f32, tag::x);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, s.staged[0].input(c.operand(first))},
      {DNNL_ARG_DIFF_DST, s.staged[1].input(dy)},
      {DNNL_ARG_SCALE, wrap(vec, c.operand(first + 1))},
      {DNNL_ARG_SHIFT, wrap(vec, s.scratch3.data())},
      {DNNL_ARG_MEAN, wrap(vec, c.operand(first + 2))},
      {DNNL_ARG_VARIANCE, wrap(vec, s.scratch.data())},
      {DNNL_ARG_DIFF_SRC, s.staged[2].output(c.result(0))},
      {DNNL_ARG_DIFF_SCALE, wrap(vec, c.result(1))},
      {DNNL_ARG_DIFF_SHIFT, wrap(vec, c.result(2))}};
  if (forward)
    args.emplace(DNNL_ARG_WORKSPACE, wrap(forward->descs[0], forward->workspace.data()));
  s.primitives[forward ? 1 : 0].execute(stream(), args);
  s.staged[2].finish(c.result(0));
  stream().wait();
}

/// linear_grad on bf16 (or f16) buffers: dx = dy w and dw = dy^T x as
/// oneDNN matmuls in the buffers' format (f32 accumulation inside), db the
/// column sums of dy accumulated in f32 and rounded once, as PyTorch's bf16
/// linear backward gives them.
void linearGradLowPrecision(const int64_t *meta, const KernelCall &c, int64_t rows, int64_t k,
                            int64_t n) {
  dt type = typeOf(c.operandFormat(0));
  bool inputGrad = !c.attribute(0);
  // dy [rows, n] x w [n, k] -> dx [rows, k]; dy^T [n, rows] x x [rows, k] -> dw [n, k].
  MatmulShape dx{{rows, n}, {n, 1}, {n, k}, {k, 1}, {rows, k}, type, type, type};
  MatmulShape dw{{n, rows}, {1, n}, {rows, k}, {k, 1}, {n, k}, type, type, type};
  Site &s = site(meta, [&](Site &s) {
    s.primitives.push_back(buildMatmul(dx, nullptr));
    s.primitives.push_back(buildMatmul(dw, nullptr));
    s.scratch.resize(n);
  });
  if (inputGrad)
    runMatmul(s, 0, dx, c.operand(0), c.operand(2), c.result(0));
  runMatmul(s, 1, dw, c.operand(0), c.operand(1), c.result(1));
  std::vector<float> &sums = s.scratch;
  std::fill(sums.begin(), sums.end(), 0.0f);
  if (type == dt::bf16) {
    // Rows in order; the loop over j vectorizes (bf16ToFloat is inline: a
    // call per element was an eighth of a bf16 GPT step).
    const auto *dy = static_cast<const uint16_t *>(c.buffers[0]);
    float *sum = sums.data();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        sum[j] += hetccl::bf16ToFloat(dy[r * n + j]);
    auto *db = static_cast<uint16_t *>(c.buffers[c.numOperands + 2]);
    for (int64_t j = 0; j < n; ++j)
      db[j] = hetccl::floatToBf16(sums[j]); // to nearest even
  } else {
    const auto *dy = static_cast<const _Float16 *>(c.buffers[0]);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j)
        sums[j] += static_cast<float>(dy[r * n + j]);
    auto *db = static_cast<_Float16 *>(c.buffers[c.numOperands + 2]);
    for (int64_t j = 0; j < n; ++j)
      db[j] = static_cast<_Float16>(sums[j]);
  }
}

} // namespace

extern "C" {

void hetrt_dnnl_matmul(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  MatmulShape m = matmulShape(c.operandShape(0), c.operandShape(1), c.attribute(0) != 0,
                              c.attribute(1) != 0);
  m.aType = typeOf(c.operandFormat(0));
  m.bType = typeOf(c.operandFormat(1));
  m.cType = typeOf(c.resultFormat(0));
  // A row-major B whose rows alias in the L1 runs from a padded copy
  // (MatmulPadding.h); the primitive is built for the copy's layout.
  MatmulShape inner = m;
  if (m.b.size() == 2 && m.bStrides[1] == 1)
    if (int64_t padded = het::rt::paddedRowStride(m.b[0], m.bStrides[0],
                                                  dnnl::memory::data_type_size(m.bType)))
      inner.bStrides[0] = padded;
  Site &s = site(meta, [&](Site &s) {
    s.primitives.push_back(buildMatmul(inner, nullptr));
    s.staged[0].init(plain(m.b, m.bStrides, m.bType), plain(inner.b, inner.bStrides, inner.bType));
  });
  s.primitives[0].execute(stream(), {{DNNL_ARG_SRC, wrap(plain(m.a, m.aStrides, m.aType), c.operand(0))},
                                     {DNNL_ARG_WEIGHTS, s.staged[0].input(c.operand(1))},
                                     {DNNL_ARG_DST, wrap(rowMajor(m.c, m.cType), c.result(0))}});
  stream().wait();
}

/// y[M, N] = x[M, K] w[N, K]^T (+ b) (+ activation). Attribute 1 says
/// which engine runs the product (bit 0: OpenBLAS; het-compile sets it
/// only without an activation, which oneDNN fuses as a post-op).
void hetrt_dnnl_linear(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  const auto &x = c.operandShape(0);
  int64_t k = x.back(), n = c.operandShape(1)[0], rows = leading(x);
  bool hasBias = c.numOperands == 3;
  // OpenBLAS multiplies f32 only; a tuning record never sends bf16 there.
  if ((c.attribute(1) & 1) && c.attribute(0) == 0 && c.allF32()) {
    float *y = c.result(0);
    if (hasBias)
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(y + r * n, c.operand(2), n * sizeof(float));
    het::rt::runGemm(het::rt::GemmEngine::OpenBlas, {rows, n, k, false, true}, c.operand(0),
                     c.operand(1), y, /*accumulate=*/hasBias);
    return;
  }
  MatmulShape m{{rows, k}, {k, 1}, {k, n}, {1, k}, {rows, n}, typeOf(c.operandFormat(0)),
                typeOf(c.operandFormat(1)), typeOf(c.resultFormat(0))};
  auto biasMd = rowMajor({1, n}, hasBias ? typeOf(c.operandFormat(2)) : dt::f32);
  Site &s = site(meta, [&](Site &s) {
    dnnl::post_ops post;
    if (c.attribute(0) == 1)
      post.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    else if (c.attribute(0) == 2)
      post.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    s.primitives.push_back(buildMatmul(m, hasBias ? &biasMd : nullptr, post));
  });
  runMatmul(s, 0, m, c.operand(0), c.operand(1), c.result(0), hasBias ? c.operand(2) : nullptr,
            &biasMd);
}

/// dx = dy w (unless unused, attribute 0), dw = dy^T x, db = sum_rows dy.
/// Attribute 1 names each product's engine: bit 0 dx, bit 1 dw on OpenBLAS.
void hetrt_dnnl_linear_grad(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  const auto &x = c.operandShape(1);
  int64_t k = x.back(), n = c.operandShape(2)[0], rows = leading(x);
  if (!c.allF32()) {
    linearGradLowPrecision(meta, c, rows, k, n);
    return;
  }
  auto engineOf = [&](int bit) {
    return (c.attribute(1) >> bit) & 1 ? het::rt::GemmEngine::OpenBlas
                                       : het::rt::GemmEngine::OneDnn;
  };
  if (!c.attribute(0)) // the input gradient is used
    het::rt::runGemm(engineOf(0), {rows, k, n, false, false}, c.operand(0), c.operand(2),
                     c.result(0));
  het::rt::runGemm(engineOf(1), {n, k, rows, true, false}, c.operand(0), c.operand(1),
                   c.result(1));
  const float *dy = c.operand(0);
  float *db = c.result(2);
  for (int64_t j = 0; j < n; ++j)
    db[j] = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      db[j] += dy[r * n + j];
}

void hetrt_dnnl_conv2d(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  Conv v = convShape(c, c.operandShape(0), c.operandLayout(0), c.operandShape(1),
                     c.resultShape(0), c.resultLayout(0));
  bool hasBias = c.numOperands == 3;
  Site &s = site(meta, [&](Site &s) {
    auto pd = convForwardPd(v, hasBias);
    s.primitives.push_back(dnnl::convolution_forward(pd));
    s.staged[0].init(v.srcMd, pd.src_desc());
    s.staged[1].init(v.weightsMd, pd.weights_desc());
    s.staged[2].init(v.dstMd, pd.dst_desc());
  });
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, s.staged[0].input(c.operand(0))},
                                             {DNNL_ARG_WEIGHTS, s.staged[1].input(c.operand(1))},
                                             {DNNL_ARG_DST, s.staged[2].output(c.result(0))}};
  if (hasBias)
    args.emplace(DNNL_ARG_BIAS,
                 wrap(dnnl::memory::desc({v.dst[1]}, v.type, tag::x), c.operand(2)));
  s.primitives[0].execute(stream(), args);
  s.staged[2].finish(c.result(0));
  stream().wait();
}

/// Operands: dy, filter; result: dx.
void hetrt_dnnl_conv2d_grad_input(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  Conv v = convShape(c, c.resultShape(0), c.resultLayout(0), c.operandShape(1),
                     c.operandShape(0), c.operandLayout(0));
  Site &s = site(meta, [&](Site &s) {
    auto desc = dnnl::convolution_backward_data::desc(
        dnnl::algorithm::convolution_direct, anyLayout(v.src, v.type), anyLayout(v.weights, v.type),
        anyLayout(v.dst, v.type), v.strides, v.dilation, v.padding, v.padding);
    auto pd = dnnl::convolution_backward_data::primitive_desc(desc, engine(),
                                                              convForwardPd(v, false));
    s.primitives.push_back(dnnl::convolution_backward_data(pd));
    s.staged[0].init(v.dstMd, pd.diff_dst_desc());
    s.staged[1].init(v.weightsMd, pd.weights_desc());
    s.staged[2].init(v.srcMd, pd.diff_src_desc());
  });
  s.primitives[0].execute(stream(), {{DNNL_ARG_DIFF_DST, s.staged[0].input(c.operand(0))},
                                     {DNNL_ARG_WEIGHTS, s.staged[1].input(c.operand(1))},
                                     {DNNL_ARG_DIFF_SRC, s.staged[2].output(c.result(0))}});
  s.staged[2].finish(c.result(0));
  stream().wait();
}

/// Operands: dy, x; result: dw.
void hetrt_dnnl_conv2d_grad_filter(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  Conv v = convShape(c, c.operandShape(1), c.operandLayout(1), c.resultShape(0),
                     c.operandShape(0), c.operandLayout(0));
  Site &s = site(meta, [&](Site &s) {
    auto desc = dnnl::convolution_backward_weights::desc(
        dnnl::algorithm::convolution_direct, anyLayout(v.src, v.type), anyLayout(v.weights, v.type),
        anyLayout(v.dst, v.type), v.strides, v.dilation, v.padding, v.padding);
    auto pd = dnnl::convolution_backward_weights::primitive_desc(desc, engine(),
                                                                 convForwardPd(v, false));
    s.primitives.push_back(dnnl::convolution_backward_weights(pd));
    s.staged[0].init(v.dstMd, pd.diff_dst_desc());
    s.staged[1].init(v.srcMd, pd.src_desc());
    s.staged[2].init(v.weightsMd, pd.diff_weights_desc());
  });
  s.primitives[0].execute(stream(), {{DNNL_ARG_DIFF_DST, s.staged[0].input(c.operand(0))},
                                     {DNNL_ARG_SRC, s.staged[1].input(c.operand(1))},
                                     {DNNL_ARG_DIFF_WEIGHTS, s.staged[2].output(c.result(0))}});
  s.staged[2].finish(c.result(0));
  stream().wait();
}

void hetrt_dnnl_batch_norm(const int64_t *meta, void *const *buffers) {
  batchNormForward(meta, buffers, false);
}
void hetrt_dnnl_batch_norm_relu(const int64_t *meta, void *const *buffers) {
  batchNormForward(meta, buffers, true);
}
void hetrt_dnnl_batch_norm_grad(const int64_t *meta, void *const *buffers) {
  batchNormBackward(meta, buffers, false);
}
void hetrt_dnnl_batch_norm_relu_grad(const int64_t *meta, void *const *buffers) {
  batchNormBackward(meta, buffers, true);
}

} // extern "C"
