//===- RandomKernels.cpp - dropout ------------------------------------------===//

#include "Kernels.h"
#include "Philox.h"

namespace het::eval {

template <typename T>
Tensor<T> dropout(const Tensor<T> &x, double p, int64_t seed, int64_t stream,
                  const RandomContext &random) {
  Tensor<T> out(x.shape);
  int64_t perSample = x.rank() == 0 || x.shape[0] == 0 ? 1 : x.size() / x.shape[0];
  int64_t first = random.firstSample * perSample;
  T scale = T(1.0 / (1.0 - p));
  for (int64_t i = 0; i < x.size(); ++i) {
    bool keep = dropoutUniform(seed, stream, random.step, first + i) >= p;
    out[i] = keep ? x[i] * scale : T(0);
  }
  return out;
}

template Tensor<float> dropout(const Tensor<float> &, double, int64_t, int64_t,
                               const RandomContext &);
template Tensor<double> dropout(const Tensor<double> &, double, int64_t, int64_t,
                                const RandomContext &);
template Tensor<long double> dropout(const Tensor<long double> &, double, int64_t, int64_t,
                                     const RandomContext &);

} // namespace het::eval
