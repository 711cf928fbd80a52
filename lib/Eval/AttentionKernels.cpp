//===- AttentionKernels.cpp - het.attention and its gradient -----------------===//
//
// The reference semantics, written as the unfused ops it replaces (matmul,
// softmax, matmul): the evaluator gives a fused model exactly the numbers
// of the model before het-fuse-attention, which is what a fused executable
// is checked against. Materializing [..., Q, K] is fine here; it is what
// the compiled kernels avoid.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

namespace het::eval {

template <typename T>
Tensor<T> attention(const Tensor<T> &q, const Tensor<T> &k, const Tensor<T> &v, double scale,
                    bool causal) {
  Tensor<T> probabilities = softmax(matmul(q, k, false, true), -1, scale, causal);
  return matmul(probabilities, v, false, false);
}

template <typename T>
std::array<Tensor<T>, 3> attentionGrad(const Tensor<T> &dy, const Tensor<T> &q,
                                       const Tensor<T> &k, const Tensor<T> &v, double scale,
                                       bool causal) {
  Tensor<T> probabilities = softmax(matmul(q, k, false, true), -1, scale, causal);
  Tensor<T> dv = matmul(probabilities, dy, true, false);
  Tensor<T> dscores = softmaxGrad(matmul(dy, v, false, true), probabilities, -1, scale);
  return {matmul(dscores, k, false, false), matmul(dscores, q, true, false), std::move(dv)};
}

#define HET_INSTANTIATE(T)                                                                    \
  template Tensor<T> attention(const Tensor<T> &, const Tensor<T> &, const Tensor<T> &,     \
                               double, bool);                                               \
  template std::array<Tensor<T>, 3> attentionGrad(const Tensor<T> &, const Tensor<T> &,     \
                                                  const Tensor<T> &, const Tensor<T> &,     \
                                                  double, bool);
HET_INSTANTIATE(float)
HET_INSTANTIATE(double)
HET_INSTANTIATE(long double)

} // namespace het::eval
