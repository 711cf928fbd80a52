//===- NormKernels.cpp - batch and layer normalization ----------------------===//
//
// Batch norm normalizes per channel over (N, spatial...) of an [N, C, ...]
// input; layer norm per row over the last dimension. Both use the biased
// variance and return what their backward op needs (mean, reciprocal std).
// RMS norm scales each row by its reciprocal root mean square (no centring)
// and returns that.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <cmath>

namespace het::eval {

namespace {
struct ChannelLayout {
  int64_t N, C, spatial;
  int64_t channelOf(int64_t i) const { return (i / spatial) % C; }
  int64_t perChannel() const { return N * spatial; }
};
ChannelLayout channelLayout(const Shape &x) {
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i)
    spatial *= x[i];
  return {x[0], x[1], spatial};
}
} // namespace

template <typename T>
std::array<Tensor<T>, 3> batchNorm(const Tensor<T> &x, const Tensor<T> &gamma,
                                   const Tensor<T> &beta, double epsilon, bool relu) {
  ChannelLayout l = channelLayout(x.shape);
  Tensor<T> mean({l.C}, T(0)), invStd({l.C}, T(0)), y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    mean[l.channelOf(i)] += x[i];
  for (int64_t c = 0; c < l.C; ++c)
    mean[c] /= T(l.perChannel());
  Tensor<T> variance({l.C}, T(0));
  for (int64_t i = 0; i < x.size(); ++i) {
    T centered = x[i] - mean[l.channelOf(i)];
    variance[l.channelOf(i)] += centered * centered;
  }
  for (int64_t c = 0; c < l.C; ++c)
    invStd[c] = T(1) / std::sqrt(variance[c] / T(l.perChannel()) + T(epsilon));
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = l.channelOf(i);
    T value = (x[i] - mean[c]) * invStd[c] * gamma[c] + beta[c];
    y[i] = relu && value < T(0) ? T(0) : value;
  }
  return {std::move(y), std::move(mean), std::move(invStd)};
}

template <typename T>
Tensor<T> batchNormInference(const Tensor<T> &x, const Tensor<T> &gamma,
                             const Tensor<T> &beta, const Tensor<T> &mean,
                             const Tensor<T> &variance, double epsilon) {
  ChannelLayout l = channelLayout(x.shape);
  Tensor<T> y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = l.channelOf(i);
    y[i] = (x[i] - mean[c]) / std::sqrt(variance[c] + T(epsilon)) * gamma[c] + beta[c];
  }
  return y;
}

// PyTorch's buffer update: blend by momentum, the variance unbiased
// (count / (count - 1)) and recovered from the saved 1 / sqrt(var + eps).
template <typename T>
std::array<Tensor<T>, 2> batchNormRunningStats(const Tensor<T> &runningMean,
                                               const Tensor<T> &runningVar,
                                               const Tensor<T> &mean, const Tensor<T> &invStd,
                                               double momentum, double epsilon, double count) {
  Tensor<T> newMean(runningMean.shape), newVar(runningVar.shape);
  T m = T(momentum), keep = T(1) - T(momentum), unbiased = T(count / (count - 1));
  for (int64_t c = 0; c < runningMean.size(); ++c) {
    T variance = T(1) / (invStd[c] * invStd[c]) - T(epsilon);
    newMean[c] = keep * runningMean[c] + m * mean[c];
    newVar[c] = keep * runningVar[c] + m * variance * unbiased;
  }
  return {std::move(newMean), std::move(newVar)};
}

// dx = gamma * invStd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat)).
template <typename T>
std::array<Tensor<T>, 3>
batchNormGrad(const Tensor<T> &dyIn, const Tensor<T> *reluOutput, const Tensor<T> &x,
              const Tensor<T> &gamma, const Tensor<T> &mean, const Tensor<T> &invStd) {
  ChannelLayout l = channelLayout(x.shape);
  Tensor<T> dy = dyIn;
  if (reluOutput)
    for (int64_t i = 0; i < dy.size(); ++i)
      if (!((*reluOutput)[i] > T(0)))
        dy[i] = T(0);
  Tensor<T> dgamma({l.C}, T(0)), dbeta({l.C}, T(0)), dx(x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = l.channelOf(i);
    dbeta[c] += dy[i];
    dgamma[c] += dy[i] * (x[i] - mean[c]) * invStd[c];
  }
  T M = T(l.perChannel());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = l.channelOf(i);
    T xhat = (x[i] - mean[c]) * invStd[c];
    dx[i] = gamma[c] * invStd[c] / M * (M * dy[i] - dbeta[c] - xhat * dgamma[c]);
  }
  return {std::move(dx), std::move(dgamma), std::move(dbeta)};
}

template <typename T>
std::array<Tensor<T>, 3> layerNorm(const Tensor<T> &x, const Tensor<T> &gamma,
                                   const Tensor<T> &beta, double epsilon) {
  int64_t D = x.dim(-1), rows = x.size() / D;
  Shape rowShape(x.shape.begin(), x.shape.end() - 1);
  Tensor<T> y(x.shape), mean(rowShape), rstd(rowShape);
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x.data.data() + r * D;
    T sum = T(0);
    for (int64_t d = 0; d < D; ++d)
      sum += row[d];
    T mu = sum / T(D), squares = T(0);
    for (int64_t d = 0; d < D; ++d)
      squares += (row[d] - mu) * (row[d] - mu);
    T inv = T(1) / std::sqrt(squares / T(D) + T(epsilon));
    mean[r] = mu;
    rstd[r] = inv;
    for (int64_t d = 0; d < D; ++d)
      y[r * D + d] = (row[d] - mu) * inv * gamma[d] + beta[d];
  }
  return {std::move(y), std::move(mean), std::move(rstd)};
}

// With g = dy * gamma: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
template <typename T>
std::array<Tensor<T>, 3> layerNormGrad(const Tensor<T> &dy, const Tensor<T> &x,
                                       const Tensor<T> &gamma, const Tensor<T> &mean,
                                       const Tensor<T> &rstd) {
  int64_t D = x.dim(-1), rows = x.size() / D;
  Tensor<T> dx(x.shape), dgamma({D}, T(0)), dbeta({D}, T(0));
  for (int64_t r = 0; r < rows; ++r) {
    T meanG = T(0), meanGX = T(0);
    for (int64_t d = 0; d < D; ++d) {
      int64_t i = r * D + d;
      T xhat = (x[i] - mean[r]) * rstd[r];
      T g = dy[i] * gamma[d];
      meanG += g;
      meanGX += g * xhat;
      dgamma[d] += dy[i] * xhat;
      dbeta[d] += dy[i];
    }
    meanG /= T(D);
    meanGX /= T(D);
    for (int64_t d = 0; d < D; ++d) {
      int64_t i = r * D + d;
      T xhat = (x[i] - mean[r]) * rstd[r];
      dx[i] = rstd[r] * (dy[i] * gamma[d] - meanG - xhat * meanGX);
    }
  }
  return {std::move(dx), std::move(dgamma), std::move(dbeta)};
}

template <typename T>
std::array<Tensor<T>, 2> rmsNorm(const Tensor<T> &x, const Tensor<T> &gamma, double epsilon) {
  int64_t D = x.dim(-1), rows = x.size() / D;
  Shape rowShape(x.shape.begin(), x.shape.end() - 1);
  Tensor<T> y(x.shape), rstd(rowShape);
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x.data.data() + r * D;
    T squares = T(0);
    for (int64_t d = 0; d < D; ++d)
      squares += row[d] * row[d];
    T inv = T(1) / std::sqrt(squares / T(D) + T(epsilon));
    rstd[r] = inv;
    for (int64_t d = 0; d < D; ++d)
      y[r * D + d] = row[d] * inv * gamma[d];
  }
  return {std::move(y), std::move(rstd)};
}

// With xhat = x * rstd and g = dy * gamma: dx = rstd * (g - xhat * mean(g * xhat)).
template <typename T>
std::array<Tensor<T>, 2> rmsNormGrad(const Tensor<T> &dy, const Tensor<T> &x,
                                     const Tensor<T> &gamma, const Tensor<T> &rstd) {
  int64_t D = x.dim(-1), rows = x.size() / D;
  Tensor<T> dx(x.shape), dgamma({D}, T(0));
  for (int64_t r = 0; r < rows; ++r) {
    T meanGX = T(0);
    for (int64_t d = 0; d < D; ++d) {
      int64_t i = r * D + d;
      T xhat = x[i] * rstd[r];
      meanGX += dy[i] * gamma[d] * xhat;
      dgamma[d] += dy[i] * xhat;
    }
    meanGX /= T(D);
    for (int64_t d = 0; d < D; ++d) {
      int64_t i = r * D + d;
      dx[i] = rstd[r] * (dy[i] * gamma[d] - x[i] * rstd[r] * meanGX);
    }
  }
  return {std::move(dx), std::move(dgamma)};
}

#define HET_INSTANTIATE(T)                                                       \
  template std::array<Tensor<T>, 3> batchNorm(const Tensor<T> &, const Tensor<T> &, \
                                              const Tensor<T> &, double, bool);  \
  template std::array<Tensor<T>, 2> batchNormRunningStats(                         \
      const Tensor<T> &, const Tensor<T> &, const Tensor<T> &, const Tensor<T> &,    \
      double, double, double);                                                       \
  template Tensor<T> batchNormInference(const Tensor<T> &, const Tensor<T> &,    \
                                        const Tensor<T> &, const Tensor<T> &,    \
                                        const Tensor<T> &, double);              \
  template std::array<Tensor<T>, 3> batchNormGrad(                               \
      const Tensor<T> &, const Tensor<T> *, const Tensor<T> &, const Tensor<T> &, \
      const Tensor<T> &, const Tensor<T> &);                                     \
  template std::array<Tensor<T>, 3> layerNorm(const Tensor<T> &, const Tensor<T> &, \
                                              const Tensor<T> &, double);        \
  template std::array<Tensor<T>, 3> layerNormGrad(                               \
      const Tensor<T> &, const Tensor<T> &, const Tensor<T> &, const Tensor<T> &, \
      const Tensor<T> &);                                                        \
  template std::array<Tensor<T>, 2> rmsNorm(const Tensor<T> &, const Tensor<T> &, double); \
  template std::array<Tensor<T>, 2> rmsNormGrad(const Tensor<T> &, const Tensor<T> &,  \
                                                const Tensor<T> &, const Tensor<T> &);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
