//===- MoEKernels.cpp - router, dispatch and combine of mixtures of experts ===//
//
// The semantics of HetMoEOps.td. Every op that moves tokens finds each
// choice's row with moeSlotRows, so dispatch, combine and their gradients
// agree on which choices were dropped.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace het::eval {

namespace {

/// Softmax of row `t` of `logits` [T, E] into `p`.
template <typename T> void softmaxRow(const Tensor<T> &logits, int64_t t, std::vector<T> &p) {
  int64_t E = logits.dim(1);
  p.resize(E);
  T peak = logits[t * E];
  for (int64_t e = 1; e < E; ++e)
    peak = std::max(peak, logits[t * E + e]);
  T sum = 0;
  for (int64_t e = 0; e < E; ++e)
    sum += p[e] = std::exp(logits[t * E + e] - peak);
  for (int64_t e = 0; e < E; ++e)
    p[e] /= sum;
}

/// Choice `c` of `indices` [T, k], checked to name one of `experts`.
int64_t checkedExpert(const Tensor<int64_t> &indices, int64_t c, int64_t experts) {
  int64_t e = indices[c];
  if (e < 0 || e >= experts)
    throw KernelError("expert " + std::to_string(e) + " chosen by token " +
                      std::to_string(c / indices.dim(1)) + " is outside [0, " +
                      std::to_string(experts) + ")");
  return e;
}

/// How many choices each expert got.
std::vector<int64_t> expertCounts(const Tensor<int64_t> &indices, int64_t experts) {
  std::vector<int64_t> counts(experts, 0);
  for (int64_t c = 0; c < indices.size(); ++c)
    ++counts[checkedExpert(indices, c, experts)];
  return counts;
}

} // namespace

template <typename T> MoERouting<T> moeRouter(const Tensor<T> &logits, int64_t k, bool normalize) {
  int64_t tokens = logits.dim(0), E = logits.dim(1);
  MoERouting<T> routing{Tensor<T>({tokens, k}), Tensor<int64_t>({tokens, k})};
  std::vector<T> p;
  std::vector<int64_t> order(E);
  for (int64_t t = 0; t < tokens; ++t) {
    softmaxRow(logits, t, p);
    std::iota(order.begin(), order.end(), 0);
    // Descending, the lower expert first on ties (stable).
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    T chosen = 0;
    for (int64_t j = 0; j < k; ++j)
      chosen += p[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      routing.indices[t * k + j] = order[j];
      routing.weights[t * k + j] = normalize ? p[order[j]] / chosen : p[order[j]];
    }
  }
  return routing;
}

template <typename T>
Tensor<T> moeRouterGrad(const Tensor<T> &dweights, const Tensor<T> &logits,
                        const Tensor<int64_t> &indices, bool normalize) {
  int64_t tokens = logits.dim(0), E = logits.dim(1), k = indices.dim(1);
  Tensor<T> dlogits(logits.shape, T(0));
  std::vector<T> p, dp(E);
  for (int64_t t = 0; t < tokens; ++t) {
    softmaxRow(logits, t, p);
    std::fill(dp.begin(), dp.end(), T(0));
    T chosen = 0, weighted = 0; // sum of chosen p; sum of g_j w_j
    for (int64_t j = 0; j < k; ++j)
      chosen += p[checkedExpert(indices, t * k + j, E)];
    for (int64_t j = 0; j < k; ++j)
      weighted += dweights[t * k + j] * p[indices[t * k + j]] / chosen;
    // w_j = p_j / S: dp_j = (g_j - sum_i g_i w_i) / S; without
    // renormalization w_j = p_j and dp_j = g_j.
    for (int64_t j = 0; j < k; ++j) {
      T g = dweights[t * k + j];
      dp[indices[t * k + j]] += normalize ? (g - weighted) / chosen : g;
    }
    T dot = 0;
    for (int64_t e = 0; e < E; ++e)
      dot += dp[e] * p[e];
    for (int64_t e = 0; e < E; ++e)
      dlogits[t * E + e] = p[e] * (dp[e] - dot);
  }
  return dlogits;
}

std::vector<int64_t> moeSlotRows(const Tensor<int64_t> &indices, int64_t experts,
                                 int64_t capacity) {
  int64_t tokens = indices.dim(0), k = indices.dim(1);
  std::vector<int64_t> rows(indices.size(), -1), taken(experts, 0);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t t = 0; t < tokens; ++t) {
      int64_t e = checkedExpert(indices, t * k + j, experts);
      if (taken[e] < capacity)
        rows[t * k + j] = taken[e]++;
    }
  return rows;
}

template <typename T>
Tensor<T> moeDispatch(const Tensor<T> &x, const Tensor<int64_t> &indices, const Tensor<T> *weights,
                      const Shape &resultShape, int64_t *dropped) {
  int64_t experts = resultShape[0], capacity = resultShape[1], D = resultShape[2];
  int64_t k = indices.dim(1);
  std::vector<int64_t> rows = moeSlotRows(indices, experts, capacity);
  if (dropped)
    *dropped = std::count(rows.begin(), rows.end(), int64_t{-1});
  Tensor<T> buffer(resultShape, T(0));
  for (int64_t c = 0; c < indices.size(); ++c) {
    if (rows[c] < 0)
      continue;
    T scale = weights ? (*weights)[c] : T(1);
    const T *token = &x[(c / k) * D];
    T *row = &buffer[(indices[c] * capacity + rows[c]) * D];
    for (int64_t d = 0; d < D; ++d)
      row[d] = scale * token[d];
  }
  return buffer;
}

template <typename T>
Tensor<T> moeCombine(const Tensor<T> &expertOutput, const Tensor<int64_t> &indices,
                     const Tensor<T> *weights) {
  int64_t experts = expertOutput.dim(0), capacity = expertOutput.dim(1), D = expertOutput.dim(2);
  int64_t tokens = indices.dim(0), k = indices.dim(1);
  std::vector<int64_t> rows = moeSlotRows(indices, experts, capacity);
  Tensor<T> y({tokens, D}, T(0));
  // Each token's choices are added in order j = 0, 1, ...: the order of
  // the sum is fixed whatever the routing.
  for (int64_t c = 0; c < indices.size(); ++c) {
    if (rows[c] < 0)
      continue;
    T scale = weights ? (*weights)[c] : T(1);
    const T *row = &expertOutput[(indices[c] * capacity + rows[c]) * D];
    T *token = &y[(c / k) * D];
    for (int64_t d = 0; d < D; ++d)
      token[d] += scale * row[d];
  }
  return y;
}

template <typename T>
Tensor<T> moeSlotGrad(const Tensor<T> &tokens, const Tensor<T> &expertRows,
                      const Tensor<int64_t> &indices) {
  int64_t experts = expertRows.dim(0), capacity = expertRows.dim(1), D = expertRows.dim(2);
  int64_t k = indices.dim(1);
  std::vector<int64_t> rows = moeSlotRows(indices, experts, capacity);
  Tensor<T> grad(indices.shape, T(0));
  for (int64_t c = 0; c < indices.size(); ++c) {
    if (rows[c] < 0)
      continue;
    const T *token = &tokens[(c / k) * D];
    const T *row = &expertRows[(indices[c] * capacity + rows[c]) * D];
    T dot = 0;
    for (int64_t d = 0; d < D; ++d)
      dot += token[d] * row[d];
    grad[c] = dot;
  }
  return grad;
}

template <typename T>
Tensor<T> moeExpertFraction(const Tensor<int64_t> &indices, int64_t experts) {
  Tensor<T> fraction({experts}, T(0));
  std::vector<int64_t> counts = expertCounts(indices, experts);
  for (int64_t e = 0; e < experts; ++e)
    fraction[e] = T(counts[e]) / T(indices.dim(0));
  return fraction;
}

std::vector<int64_t> moeFilledRows(const Tensor<int64_t> &indices, int64_t experts,
                                   int64_t capacity) {
  // [E] counts (after het.moe_to_experts): each expert's rows, as given.
  if (indices.rank() == 1) {
    if (indices.dim(0) != experts)
      throw KernelError("counts of filled rows for " + std::to_string(indices.dim(0)) +
                        " experts, the rows hold " + std::to_string(experts));
    std::vector<int64_t> filled(indices.data.begin(), indices.data.end());
    for (int64_t &rows : filled)
      if (rows < 0 || rows > capacity)
        throw KernelError("an expert's count of filled rows " + std::to_string(rows) +
                          " is outside [0, " + std::to_string(capacity) + "]");
    return filled;
  }
  std::vector<int64_t> filled = expertCounts(indices, experts);
  for (int64_t &rows : filled)
    rows = std::min(rows, capacity);
  return filled;
}

template <typename T>
Tensor<T> moeExpertMatmul(const Tensor<T> &rows, const Tensor<T> &weight,
                          const Tensor<int64_t> &indices, bool transposeRhs) {
  int64_t E = rows.dim(0), C = rows.dim(1), K = rows.dim(2);
  int64_t N = transposeRhs ? weight.dim(1) : weight.dim(2);
  std::vector<int64_t> filled = moeFilledRows(indices, E, C);
  Tensor<T> y({E, C, N}, T(0));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = 0; r < filled[e]; ++r)
      for (int64_t n = 0; n < N; ++n) {
        T sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += rows[(e * C + r) * K + k] *
                 (transposeRhs ? weight[(e * N + n) * K + k] : weight[(e * K + k) * N + n]);
        y[(e * C + r) * N + n] = sum;
      }
  return y;
}

template <typename T>
Tensor<T> moeExpertWeightGrad(const Tensor<T> &rows, const Tensor<T> &dy,
                              const Tensor<int64_t> &indices, bool transposeResult) {
  int64_t E = rows.dim(0), C = rows.dim(1), K = rows.dim(2), N = dy.dim(2);
  std::vector<int64_t> filled = moeFilledRows(indices, E, C);
  Tensor<T> dw(transposeResult ? Shape{E, N, K} : Shape{E, K, N}, T(0));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        T sum = 0;
        for (int64_t r = 0; r < filled[e]; ++r)
          sum += rows[(e * C + r) * K + k] * dy[(e * C + r) * N + n];
        dw[transposeResult ? (e * N + n) * K + k : (e * K + k) * N + n] = sum;
      }
  return dw;
}

template <typename T>
std::pair<Tensor<T>, Tensor<int64_t>> moeToExpertsHere(const Tensor<T> &rows,
                                                       const Tensor<int64_t> &indices,
                                                       int64_t capacity) {
  int64_t E = rows.dim(0), C = rows.dim(1), X = rows.dim(2);
  std::vector<int64_t> filled = moeFilledRows(indices, E, C);
  Tensor<T> out({E, capacity, X}, T(0));
  Tensor<int64_t> counts({E});
  for (int64_t e = 0; e < E; ++e) {
    std::copy_n(rows.data.begin() + e * C * X, filled[e] * X, out.data.begin() + e * capacity * X);
    counts[e] = filled[e];
  }
  return {std::move(out), std::move(counts)};
}

template <typename T>
Tensor<T> moeFromExpertsHere(const Tensor<T> &expertRows, const Tensor<int64_t> &indices,
                             int64_t capacity) {
  int64_t E = expertRows.dim(0), R = expertRows.dim(1), X = expertRows.dim(2);
  std::vector<int64_t> filled = moeFilledRows(indices, E, capacity);
  Tensor<T> rows({E, capacity, X}, T(0));
  for (int64_t e = 0; e < E; ++e)
    std::copy_n(expertRows.data.begin() + e * R * X, filled[e] * X,
                rows.data.begin() + e * capacity * X);
  return rows;
}

#define HET_INSTANTIATE(T)                                                                 \
  template MoERouting<T> moeRouter(const Tensor<T> &, int64_t, bool);                      \
  template Tensor<T> moeRouterGrad(const Tensor<T> &, const Tensor<T> &,                   \
                                   const Tensor<int64_t> &, bool);                         \
  template Tensor<T> moeDispatch(const Tensor<T> &, const Tensor<int64_t> &, const Tensor<T> *, \
                                 const Shape &, int64_t *);                                \
  template Tensor<T> moeCombine(const Tensor<T> &, const Tensor<int64_t> &, const Tensor<T> *); \
  template Tensor<T> moeSlotGrad(const Tensor<T> &, const Tensor<T> &, const Tensor<int64_t> &); \
  template Tensor<T> moeExpertFraction(const Tensor<int64_t> &, int64_t);                  \
  template Tensor<T> moeExpertMatmul(const Tensor<T> &, const Tensor<T> &,                  \
                                     const Tensor<int64_t> &, bool);                        \
  template Tensor<T> moeExpertWeightGrad(const Tensor<T> &, const Tensor<T> &,              \
                                         const Tensor<int64_t> &, bool);                    \
  template std::pair<Tensor<T>, Tensor<int64_t>> moeToExpertsHere(                          \
      const Tensor<T> &, const Tensor<int64_t> &, int64_t);                                 \
  template Tensor<T> moeFromExpertsHere(const Tensor<T> &, const Tensor<int64_t> &, int64_t);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
