//===- AttentionKernels.cpp - hetrt_dnnl_attention{,_grad}: blocked attention ===//
//
// softmax(scale q k^T) v without the [..., Q, K] scores or probabilities:
// each task takes one (batch, head) and a block of kBlockRows queries, and
// keeps that block's scores -- kBlockRows x K floats, in cache -- only while
// it computes them, normalizes them and multiplies them into v. A causal
// block stops at the last key its last query sees, so the masked half of
// the scores is neither computed nor multiplied. The gradient recomputes a
// block's probabilities the same way (FlashAttention's recomputation: the
// forward saves nothing but its output) and accumulates dk and dv of a
// (batch, head) over its query blocks, so its tasks are whole heads.
//
// The block products are oneDNN's sgemm. Inside a parallel region it runs
// on the calling thread, so every block is computed by one thread with the
// same instructions whatever --threads is: results do not depend on the
// thread count. The row loops (max, exp, sum) are vectorized with glibc's
// vector expf (libmvec), chosen for the running CPU by target_clones.
//
//===----------------------------------------------------------------------===//

#include "KernelCall.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

// glibc's libmvec provides vector versions of expf; declaring them lets
// `#pragma omp simd` loops call them (as <math.h> does under -ffast-math).
extern "C" float expf(float) noexcept __attribute__((simd("notinbranch")));

using het::rt::KernelCall;

namespace {

/// Queries per block: 64 rows of scores for K = 4096 keys are 1 MiB.
constexpr int64_t kBlockRows = 64;

/// The shapes of one call: `heads` independent [Q, D] x [K, D] x [K, E].
struct AttentionShape {
  int64_t heads, queries, keys, depth, valueDepth;
  float scale;
  bool causal;

  /// Keys query `i` sees: all, or up to i + (K - Q) with `causal`.
  int64_t visibleKeys(int64_t i) const {
    if (!causal)
      return keys;
    return std::clamp<int64_t>(i + (keys - queries) + 1, 0, keys);
  }
};

AttentionShape shapeOf(const KernelCall &c, int query, int key, int value) {
  const auto &q = c.operandShape(query), &k = c.operandShape(key), &v = c.operandShape(value);
  AttentionShape s;
  s.heads = 1;
  for (size_t d = 0; d + 2 < q.size(); ++d)
    s.heads *= q[d];
  s.queries = q[q.size() - 2];
  s.depth = q.back();
  s.keys = k[k.size() - 2];
  s.valueDepth = v.back();
  s.scale = static_cast<float>(c.floatAttribute(0));
  s.causal = c.attribute(1) != 0;
  return s;
}

/// One block product (row-major, as BLAS with the orders swapped). oneDNN
/// fails only on arguments het computed itself, so a failure is a bug:
/// report it and stop rather than train on garbage.
void gemm(char transA, char transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  dnnl_status_t status = dnnl_sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    std::fprintf(stderr,
                 "error: het.attention: oneDNN sgemm %c%c %lldx%lldx%lld failed (status %d)\n",
                 transA, transB, static_cast<long long>(m), static_cast<long long>(n),
                 static_cast<long long>(k), static_cast<int>(status));
    std::exit(1);
  }
}

/// Softmax of the first `visible` entries of `row` in place; the rest of
/// its `length` entries become 0.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
softmaxRow(float *row, int64_t visible, int64_t length) {
  if (visible > 0) {
    float peak = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : peak)
    for (int64_t j = 0; j < visible; ++j)
      peak = std::max(peak, row[j]);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < visible; ++j) {
      row[j] = expf(row[j] - peak);
      sum += row[j];
    }
    float inverse = 1.0f / sum;
#pragma omp simd
    for (int64_t j = 0; j < visible; ++j)
      row[j] *= inverse;
  }
  std::fill(row + std::max<int64_t>(visible, 0), row + length, 0.0f);
}

/// ds = scale * p * (dp - delta) over one row, in dp's place.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
scoreGradientRow(const float *p, float *dp, float delta, float scale, int64_t length) {
#pragma omp simd
  for (int64_t j = 0; j < length; ++j)
    dp[j] = scale * p[j] * (dp[j] - delta);
}

/// Keys a block of queries [first, first + rows) sees at most.
int64_t blockKeys(const AttentionShape &s, int64_t first, int64_t rows) {
  return s.visibleKeys(first + rows - 1);
}

/// The probabilities of queries [first, first + rows) of one head, as
/// rows x `keys` (row stride `keys`) in `p`.
void blockProbabilities(const AttentionShape &s, const float *q, const float *k, int64_t first,
                        int64_t rows, int64_t keys, float *p) {
  gemm('N', 'T', rows, keys, s.depth, s.scale, q + first * s.depth, s.depth, k, s.depth, 0.0f, p,
       keys);
  for (int64_t r = 0; r < rows; ++r)
    softmaxRow(p + r * keys, std::min(s.visibleKeys(first + r), keys), keys);
}

/// A thread's scratch, kept between calls.
std::vector<float> &scratch(int which, size_t size) {
  thread_local std::vector<float> buffers[2];
  if (buffers[which].size() < size)
    buffers[which].resize(size);
  return buffers[which];
}

} // namespace

extern "C" {

/// o = softmax(scale q k^T) v: q [..., Q, D], k [..., K, D], v [..., K, E].
void hetrt_dnnl_attention(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  AttentionShape s = shapeOf(c, 0, 1, 2);
  const float *q = c.operand(0), *k = c.operand(1), *v = c.operand(2);
  float *o = c.result(0);
  int64_t blocks = (s.queries + kBlockRows - 1) / kBlockRows;
  int64_t tasks = s.heads * blocks;
#pragma omp parallel for schedule(dynamic)
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t head = task / blocks, first = task % blocks * kBlockRows;
    int64_t rows = std::min(kBlockRows, s.queries - first);
    int64_t keys = blockKeys(s, first, rows);
    float *out = o + (head * s.queries + first) * s.valueDepth;
    if (keys == 0) {
      std::fill(out, out + rows * s.valueDepth, 0.0f);
      continue;
    }
    float *p = scratch(0, rows * keys).data();
    blockProbabilities(s, q + head * s.queries * s.depth, k + head * s.keys * s.depth, first,
                       rows, keys, p);
    gemm('N', 'N', rows, s.valueDepth, keys, 1.0f, p, keys, v + head * s.keys * s.valueDepth,
         s.valueDepth, 0.0f, out, s.valueDepth);
  }
}

/// dq, dk, dv of hetrt_dnnl_attention from do, q, k, v and its output o.
void hetrt_dnnl_attention_grad(const int64_t *meta, void *const *buffers) {
  KernelCall c(meta, buffers);
  AttentionShape s = shapeOf(c, 1, 2, 3);
  const float *dO = c.operand(0), *q = c.operand(1), *k = c.operand(2), *v = c.operand(3),
              *o = c.operand(4);
  float *dq = c.result(0), *dk = c.result(1), *dv = c.result(2);
#pragma omp parallel for schedule(dynamic)
  for (int64_t head = 0; head < s.heads; ++head) {
    const float *qh = q + head * s.queries * s.depth, *kh = k + head * s.keys * s.depth;
    const float *vh = v + head * s.keys * s.valueDepth;
    const float *doh = dO + head * s.queries * s.valueDepth;
    const float *oh = o + head * s.queries * s.valueDepth;
    float *dqh = dq + head * s.queries * s.depth, *dkh = dk + head * s.keys * s.depth;
    float *dvh = dv + head * s.keys * s.valueDepth;
    std::fill(dkh, dkh + s.keys * s.depth, 0.0f);
    std::fill(dvh, dvh + s.keys * s.valueDepth, 0.0f);
    for (int64_t first = 0; first < s.queries; first += kBlockRows) {
      int64_t rows = std::min(kBlockRows, s.queries - first);
      int64_t keys = blockKeys(s, first, rows);
      if (keys == 0) {
        std::fill(dqh + first * s.depth, dqh + (first + rows) * s.depth, 0.0f);
        continue;
      }
      float *p = scratch(0, rows * keys).data();
      float *dp = scratch(1, rows * keys).data();
      const float *doBlock = doh + first * s.valueDepth;
      blockProbabilities(s, qh, kh, first, rows, keys, p);
      // dv += p^T do; dp = do v^T.
      gemm('T', 'N', keys, s.valueDepth, rows, 1.0f, p, keys, doBlock, s.valueDepth, 1.0f, dvh,
           s.valueDepth);
      gemm('N', 'T', rows, keys, s.valueDepth, 1.0f, doBlock, s.valueDepth, vh, s.valueDepth,
           0.0f, dp, keys);
      // softmax's gradient: the row sum of dp * p is do . o.
      for (int64_t r = 0; r < rows; ++r) {
        const float *dRow = doBlock + r * s.valueDepth, *oRow = oh + (first + r) * s.valueDepth;
        float delta = 0.0f;
        for (int64_t e = 0; e < s.valueDepth; ++e)
          delta += dRow[e] * oRow[e];
        scoreGradientRow(p + r * keys, dp + r * keys, delta, s.scale, keys);
      }
      // dq = ds k; dk += ds^T q.
      gemm('N', 'N', rows, s.depth, keys, 1.0f, dp, keys, kh, s.depth, 0.0f,
           dqh + first * s.depth, s.depth);
      gemm('T', 'N', keys, s.depth, rows, 1.0f, dp, keys, qh + first * s.depth, s.depth, 1.0f,
           dkh, s.depth);
    }
  }
}

} // extern "C"
