//===- OptimizerKernels.cpp - SGD and Adam updates ---------------------------===//
//
// PyTorch's update rules (torch.optim.SGD without dampening, torch.optim.Adam
// and AdamW), so a het training step can be checked against PyTorch's.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include <cmath>

namespace het::eval {

template <typename T>
std::array<Tensor<T>, 2> sgd(const Tensor<T> &param, const Tensor<T> &grad,
                             const Tensor<T> &buffer, const SgdOptions &o) {
  Tensor<T> newParam(param.shape), newBuffer = buffer;
  for (int64_t i = 0; i < param.size(); ++i) {
    T g = grad[i] + T(o.weightDecay) * param[i];
    T step = g;
    if (o.momentum != 0) {
      newBuffer[i] = T(o.momentum) * buffer[i] + g;
      step = o.nesterov ? g + T(o.momentum) * newBuffer[i] : newBuffer[i];
    }
    newParam[i] = param[i] - T(o.lr) * step;
  }
  return {std::move(newParam), std::move(newBuffer)};
}

template <typename T>
std::array<Tensor<T>, 3> adam(const Tensor<T> &param, const Tensor<T> &grad,
                              const Tensor<T> &expAvg, const Tensor<T> &expAvgSq,
                              int64_t step, const AdamOptions &o) {
  if (step < 1)
    throw KernelError("Adam step must be >= 1 (it is 1-based), got " + std::to_string(step));
  // As torch.optim.Adam: the scalars (1 - beta, the bias corrections, the
  // step size) are computed in double and rounded once, as PyTorch's Python
  // floats are; the compiled update does the same, so both agree.
  double correction1 = 1.0 - std::pow(o.beta1, double(step));
  double correction2 = 1.0 - std::pow(o.beta2, double(step));
  T stepSize = T(o.lr / correction1), correction2Sqrt = T(std::sqrt(correction2));
  T beta1 = T(o.beta1), beta2 = T(o.beta2), rest1 = T(1.0 - o.beta1), rest2 = T(1.0 - o.beta2);
  T decay = T(o.weightDecay), decoupledScale = T(1.0 - o.lr * o.weightDecay);
  Tensor<T> p(param.shape), m(param.shape), v(param.shape);
  for (int64_t i = 0; i < param.size(); ++i) {
    T value = param[i], g = grad[i];
    if (o.decoupled)
      value *= decoupledScale;
    else
      g += decay * value;
    m[i] = beta1 * expAvg[i] + rest1 * g;
    v[i] = beta2 * expAvgSq[i] + rest2 * g * g;
    T denominator = std::sqrt(v[i]) / correction2Sqrt + T(o.epsilon);
    p[i] = value - stepSize * m[i] / denominator;
  }
  return {std::move(p), std::move(m), std::move(v)};
}

template std::array<Tensor<float>, 2> sgd(const Tensor<float> &, const Tensor<float> &,
                                          const Tensor<float> &, const SgdOptions &);
template std::array<Tensor<double>, 2> sgd(const Tensor<double> &, const Tensor<double> &,
                                           const Tensor<double> &, const SgdOptions &);
template std::array<Tensor<float>, 3> adam(const Tensor<float> &, const Tensor<float> &,
                                           const Tensor<float> &, const Tensor<float> &,
                                           int64_t, const AdamOptions &);
template std::array<Tensor<double>, 3> adam(const Tensor<double> &, const Tensor<double> &,
                                            const Tensor<double> &, const Tensor<double> &,
                                            int64_t, const AdamOptions &);
template std::array<Tensor<long double>, 2> sgd(const Tensor<long double> &,
                                                const Tensor<long double> &,
                                                const Tensor<long double> &, const SgdOptions &);
template std::array<Tensor<long double>, 3>
adam(const Tensor<long double> &, const Tensor<long double> &, const Tensor<long double> &,
     const Tensor<long double> &, int64_t, const AdamOptions &);

} // namespace het::eval
