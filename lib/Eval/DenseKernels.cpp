//===- DenseKernels.cpp - matmul and fully connected layers -----------------===//

#include "Kernels.h"

namespace het::eval {

// Batched: lhs [..., M, K] (or [..., K, M] transposed), rhs [..., K, N] or a
// plain matrix shared by every batch.
template <typename T>
Tensor<T> matmul(const Tensor<T> &lhs, const Tensor<T> &rhs, bool transposeLhs,
                 bool transposeRhs) {
  int64_t M = transposeLhs ? lhs.dim(-1) : lhs.dim(-2);
  int64_t K = transposeLhs ? lhs.dim(-2) : lhs.dim(-1);
  int64_t N = transposeRhs ? rhs.dim(-2) : rhs.dim(-1);
  Shape shape(lhs.shape.begin(), lhs.shape.end() - 2);
  int64_t batches = numElements(shape);
  shape.push_back(M);
  shape.push_back(N);
  bool sharedRhs = rhs.rank() == 2 && lhs.rank() > 2;
  Tensor<T> out(shape, T(0));
  for (int64_t b = 0; b < batches; ++b) {
    const T *A = lhs.data.data() + b * M * K;
    const T *B = rhs.data.data() + (sharedRhs ? 0 : b * K * N);
    T *C = out.data.data() + b * M * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        T sum = T(0);
        for (int64_t k = 0; k < K; ++k)
          sum += (transposeLhs ? A[k * M + m] : A[m * K + k]) *
                 (transposeRhs ? B[n * K + k] : B[k * N + n]);
        C[m * N + n] = sum;
      }
  }
  return out;
}

template <typename T>
Tensor<T> linear(const Tensor<T> &x, const Tensor<T> &w, const Tensor<T> *bias,
                 ActivationKind activation) {
  int64_t in = w.dim(1), outFeatures = w.dim(0), rows = x.size() / in;
  Shape shape = x.shape;
  shape.back() = outFeatures;
  Tensor<T> y(shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outFeatures; ++o) {
      T sum = bias ? (*bias)[o] : T(0);
      for (int64_t i = 0; i < in; ++i)
        sum += x[r * in + i] * w[o * in + i];
      if (activation == ActivationKind::ReLU)
        sum = sum > T(0) ? sum : T(0);
      else if (activation == ActivationKind::GELU)
        sum = geluScalar(sum, /*tanhApproximation=*/false);
      y[r * outFeatures + o] = sum;
    }
  return y;
}

template <typename T>
std::array<Tensor<T>, 3> linearGrad(const Tensor<T> &dy, const Tensor<T> &x,
                                    const Tensor<T> &w) {
  int64_t in = w.dim(1), outFeatures = w.dim(0), rows = x.size() / in;
  Tensor<T> dx(x.shape, T(0)), dw(w.shape, T(0)), db({outFeatures}, T(0));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outFeatures; ++o) {
      T g = dy[r * outFeatures + o];
      db[o] += g;
      for (int64_t i = 0; i < in; ++i) {
        dx[r * in + i] += g * w[o * in + i];
        dw[o * in + i] += g * x[r * in + i];
      }
    }
  return {std::move(dx), std::move(dw), std::move(db)};
}

#define HET_INSTANTIATE(T)                                                     \
  template Tensor<T> matmul(const Tensor<T> &, const Tensor<T> &, bool, bool); \
  template Tensor<T> linear(const Tensor<T> &, const Tensor<T> &,              \
                            const Tensor<T> *, ActivationKind);                \
  template std::array<Tensor<T>, 3> linearGrad(                                \
      const Tensor<T> &, const Tensor<T> &, const Tensor<T> &);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
