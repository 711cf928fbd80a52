//===- LossKernels.cpp - softmax, cross-entropy and embeddings ---------------===//

#include "Kernels.h"

#include <cmath>
#include <limits>

namespace het::eval {

namespace {
/// The tensor seen as [outer, length, inner] around `axis`.
struct Lines {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * length + k) * inner + i; }
};
Lines linesAlong(const Shape &shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0)
    axis += rank;
  Lines l;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? l.outer : d == axis ? l.length : l.inner) *= shape[d];
  return l;
}
} // namespace

template <typename T>
Tensor<T> softmax(const Tensor<T> &x, int64_t axis, double scale, bool causal) {
  Lines l = linesAlong(x.shape, axis);
  // With `causal` the axis is the last one: key j is visible to query i when
  // j <= i + (K - Q).
  int64_t queries = causal ? x.dim(-2) : 1, keys = l.length;
  Tensor<T> y(x.shape, T(0));
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      int64_t visible = keys;
      if (causal)
        visible = std::min<int64_t>(keys, o % queries + (keys - queries) + 1);
      T peak = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < visible; ++k)
        peak = std::max(peak, T(scale) * x[l.at(o, k, i)]);
      T sum = T(0);
      for (int64_t k = 0; k < visible; ++k)
        sum += std::exp(T(scale) * x[l.at(o, k, i)] - peak);
      for (int64_t k = 0; k < visible; ++k)
        y[l.at(o, k, i)] = std::exp(T(scale) * x[l.at(o, k, i)] - peak) / sum;
    }
  return y;
}

template <typename T>
Tensor<T> softmaxGrad(const Tensor<T> &dy, const Tensor<T> &y, int64_t axis, double scale) {
  Lines l = linesAlong(y.shape, axis);
  Tensor<T> dx(y.shape);
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      T dot = T(0);
      for (int64_t k = 0; k < l.length; ++k)
        dot += dy[l.at(o, k, i)] * y[l.at(o, k, i)];
      for (int64_t k = 0; k < l.length; ++k) {
        int64_t at = l.at(o, k, i);
        dx[at] = T(scale) * y[at] * (dy[at] - dot);
      }
    }
  return dx;
}

namespace {
int64_t checkedLabel(const Tensor<int64_t> &labels, int64_t row, int64_t classes) {
  int64_t label = labels[row];
  if (label < 0 || label >= classes)
    throw KernelError("label " + std::to_string(label) + " at position " +
                      std::to_string(row) + " is outside [0, " +
                      std::to_string(classes) + ")");
  return label;
}
} // namespace

template <typename T>
Tensor<T> crossEntropy(const Tensor<T> &logits, const Tensor<int64_t> &labels) {
  int64_t classes = logits.dim(-1), rows = logits.size() / classes;
  T total = T(0);
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = logits.data.data() + r * classes;
    T peak = row[0];
    for (int64_t c = 1; c < classes; ++c)
      peak = std::max(peak, row[c]);
    T sum = T(0);
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - peak);
    total += peak + std::log(sum) - row[checkedLabel(labels, r, classes)];
  }
  Tensor<T> loss({}, total / T(rows));
  return loss;
}

template <typename T>
Tensor<T> crossEntropyGrad(const Tensor<T> &dloss, const Tensor<T> &logits,
                           const Tensor<int64_t> &labels) {
  int64_t classes = logits.dim(-1), rows = logits.size() / classes;
  Tensor<T> probabilities = softmax(logits, -1, 1.0, false);
  T factor = dloss[0] / T(rows);
  for (int64_t r = 0; r < rows; ++r) {
    probabilities[r * classes + checkedLabel(labels, r, classes)] -= T(1);
    for (int64_t c = 0; c < classes; ++c)
      probabilities[r * classes + c] *= factor;
  }
  return probabilities;
}

namespace {
int64_t checkedRow(const Tensor<int64_t> &indices, int64_t position, int64_t rows) {
  int64_t row = indices[position];
  if (row < 0 || row >= rows)
    throw KernelError("index " + std::to_string(row) + " at position " +
                      std::to_string(position) + " is outside the table's [0, " +
                      std::to_string(rows) + ")");
  return row;
}
} // namespace

template <typename T>
Tensor<T> embedding(const Tensor<T> &table, const Tensor<int64_t> &indices, int64_t member,
                    int64_t members) {
  // This member's rows of a vocabulary of members * rows (one member: all).
  int64_t rows = table.dim(0), D = table.dim(1), first = member * rows;
  Shape shape = indices.shape;
  shape.push_back(D);
  Tensor<T> out(shape, T(0));
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t row = checkedRow(indices, i, rows * members) - first;
    if (row < 0 || row >= rows)
      continue;
    for (int64_t d = 0; d < D; ++d)
      out[i * D + d] = table[row * D + d];
  }
  return out;
}

template <typename T>
Tensor<T> embeddingGrad(const Tensor<T> &dy, const Tensor<int64_t> &indices,
                        const Shape &tableShape, int64_t member, int64_t members,
                        int64_t paddingIdx) {
  int64_t rows = tableShape[0], D = tableShape[1], first = member * rows;
  Tensor<T> dtable(tableShape, T(0));
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t global = checkedRow(indices, i, rows * members), row = global - first;
    if (row < 0 || row >= rows || global == paddingIdx)
      continue;
    for (int64_t d = 0; d < D; ++d)
      dtable[row * D + d] += dy[i * D + d];
  }
  return dtable;
}

#define HET_INSTANTIATE(T)                                                       \
  template Tensor<T> softmax(const Tensor<T> &, int64_t, double, bool);          \
  template Tensor<T> softmaxGrad(const Tensor<T> &, const Tensor<T> &, int64_t,  \
                                 double);                                        \
  template Tensor<T> crossEntropy(const Tensor<T> &, const Tensor<int64_t> &);   \
  template Tensor<T> crossEntropyGrad(const Tensor<T> &, const Tensor<T> &,      \
                                      const Tensor<int64_t> &);                  \
  template Tensor<T> embedding(const Tensor<T> &, const Tensor<int64_t> &, int64_t,     \
                               int64_t);                                               \
  template Tensor<T> embeddingGrad(const Tensor<T> &, const Tensor<int64_t> &,          \
                                   const Shape &, int64_t, int64_t, int64_t);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
