//===- LayoutKernels.cpp - reductions and transposes -------------------------===//

#include "Kernels.h"

namespace het::eval {

template <typename T>
Tensor<T> reduceSum(const Tensor<T> &x, const std::vector<int64_t> &axes, bool keepDims,
                    bool mean) {
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t axis : axes)
    reduced[axis < 0 ? axis + x.rank() : axis] = true;
  Shape kept = x.shape;
  int64_t count = 1;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
    }
  Tensor<T> out(kept, T(0));
  std::vector<int64_t> offsets = broadcastOffsets(kept, x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out[offsets[i]] += x[i];
  if (mean)
    for (T &value : out.data)
      value /= T(count);
  if (!keepDims) {
    Shape squeezed;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (!reduced[d])
        squeezed.push_back(x.shape[d]);
    out.shape = squeezed;
  }
  return out;
}

template <typename T>
Tensor<T> transpose(const Tensor<T> &x, const std::vector<int64_t> &perm) {
  Shape shape(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    shape[d] = x.shape[perm[d]];
  Tensor<T> out(shape);
  Shape inStrides = stridesOf(x.shape);
  Shape index(shape.size(), 0);
  for (int64_t linear = 0; linear < out.size(); ++linear) {
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      offset += index[d] * inStrides[perm[d]];
    out[linear] = x[offset];
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

template Tensor<float> reduceSum(const Tensor<float> &, const std::vector<int64_t> &, bool, bool);
template Tensor<double> reduceSum(const Tensor<double> &, const std::vector<int64_t> &, bool, bool);
template Tensor<long double> reduceSum(const Tensor<long double> &, const std::vector<int64_t> &,
                                       bool, bool);
template Tensor<long double> transpose(const Tensor<long double> &, const std::vector<int64_t> &);
template Tensor<float> transpose(const Tensor<float> &, const std::vector<int64_t> &);
template Tensor<double> transpose(const Tensor<double> &, const std::vector<int64_t> &);
template Tensor<int64_t> transpose(const Tensor<int64_t> &, const std::vector<int64_t> &);

} // namespace het::eval
