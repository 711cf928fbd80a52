//===- ElementwiseKernels.cpp - element-wise and broadcasting kernels ------===//

#include "Kernels.h"

#include <cmath>

namespace het::eval {

template <typename T>
Tensor<T> binary(BinaryKind kind, const Tensor<T> &lhs, const Tensor<T> &rhs,
                 const Shape &resultShape) {
  Tensor<T> out(resultShape);
  std::vector<int64_t> a = broadcastOffsets(lhs.shape, resultShape);
  std::vector<int64_t> b = broadcastOffsets(rhs.shape, resultShape);
  for (int64_t i = 0; i < out.size(); ++i) {
    T x = lhs[a[i]], y = rhs[b[i]];
    out[i] = kind == BinaryKind::Add ? x + y : kind == BinaryKind::Sub ? x - y : x * y;
  }
  return out;
}

template <typename T> Tensor<T> relu(const Tensor<T> &x) {
  Tensor<T> out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out[i] = x[i] > T(0) ? x[i] : T(0);
  return out;
}

template <typename T> Tensor<T> reluGrad(const Tensor<T> &dy, const Tensor<T> &x) {
  Tensor<T> out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out[i] = x[i] > T(0) ? dy[i] : T(0);
  return out;
}

// sqrt(2 / pi) and GPT-2's cubic coefficient for the tanh approximation.
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

template <typename T> T geluScalar(T x, bool tanhApproximation) {
  if (tanhApproximation)
    return T(0.5) * x * (T(1) + std::tanh(T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x)));
  return T(0.5) * x * (T(1) + std::erf(x * T(kInvSqrt2)));
}

template <typename T> Tensor<T> gelu(const Tensor<T> &x, bool tanhApproximation) {
  Tensor<T> out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out[i] = geluScalar(x[i], tanhApproximation);
  return out;
}

template <typename T>
Tensor<T> geluGrad(const Tensor<T> &dy, const Tensor<T> &x, bool tanhApproximation) {
  Tensor<T> out(x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    T v = x[i], derivative;
    if (tanhApproximation) {
      T inner = T(kSqrt2OverPi) * (v + T(kGeluCubic) * v * v * v);
      T t = std::tanh(inner);
      T dInner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v * v);
      derivative = T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dInner;
    } else {
      T cdf = T(0.5) * (T(1) + std::erf(v * T(kInvSqrt2)));
      T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * v * v);
      derivative = cdf + v * pdf;
    }
    out[i] = dy[i] * derivative;
  }
  return out;
}

template <typename T> Tensor<T> broadcastTo(const Tensor<T> &x, const Shape &shape) {
  Tensor<T> out(shape);
  std::vector<int64_t> offsets = broadcastOffsets(x.shape, shape);
  for (int64_t i = 0; i < out.size(); ++i)
    out[i] = x[offsets[i]];
  return out;
}

template <typename T> Tensor<T> sumToShape(const Tensor<T> &x, const Shape &shape) {
  Tensor<T> out(shape, T(0));
  std::vector<int64_t> offsets = broadcastOffsets(shape, x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out[offsets[i]] += x[i];
  return out;
}

#define HET_INSTANTIATE(T)                                                      \
  template Tensor<T> binary(BinaryKind, const Tensor<T> &, const Tensor<T> &,   \
                            const Shape &);                                     \
  template Tensor<T> relu(const Tensor<T> &);                                   \
  template Tensor<T> reluGrad(const Tensor<T> &, const Tensor<T> &);            \
  template T geluScalar(T, bool);                                               \
  template Tensor<T> gelu(const Tensor<T> &, bool);                             \
  template Tensor<T> geluGrad(const Tensor<T> &, const Tensor<T> &, bool);      \
  template Tensor<T> broadcastTo(const Tensor<T> &, const Shape &);             \
  template Tensor<T> sumToShape(const Tensor<T> &, const Shape &);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
