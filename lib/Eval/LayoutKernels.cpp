//===- LayoutKernels.cpp - reductions, transposes, concatenation, slicing ----===//

#include "Kernels.h"

#include <cmath>
#include <limits>

namespace het::eval {

namespace {

/// The reduced axes of a reduction over `axes` (negative ones from the end)
/// of a tensor of `shape`: the result's shape with kept dimensions
/// (`kept`), and the number of elements each result element reduces.
struct Reduction {
  std::vector<bool> reduced;
  Shape kept;
  int64_t count = 1;

  Reduction(const Shape &shape, const std::vector<int64_t> &axes)
      : reduced(shape.size(), false), kept(shape) {
    int64_t rank = static_cast<int64_t>(shape.size());
    for (int64_t axis : axes)
      reduced[axis < 0 ? axis + rank : axis] = true;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[d]) {
        count *= kept[d];
        kept[d] = 1;
      }
  }

  /// Drops the reduced dimensions from a result of shape `kept`.
  template <typename T> void squeeze(Tensor<T> &out, const Shape &input) const {
    Shape squeezed;
    for (size_t d = 0; d < input.size(); ++d)
      if (!reduced[d])
        squeezed.push_back(input[d]);
    out.shape = squeezed;
  }
};

} // namespace

template <typename T>
Tensor<T> reduceSum(const Tensor<T> &x, const std::vector<int64_t> &axes, bool keepDims,
                    bool mean) {
  Reduction r(x.shape, axes);
  Tensor<T> out(r.kept, T(0));
  std::vector<int64_t> offsets = broadcastOffsets(r.kept, x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    out[offsets[i]] += x[i];
  if (mean)
    for (T &value : out.data)
      value /= T(r.count);
  if (!keepDims)
    r.squeeze(out, x.shape);
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

template <typename T>
Tensor<T> reduceMax(const Tensor<T> &x, const std::vector<int64_t> &axes, bool keepDims) {
  Reduction r(x.shape, axes);
  Tensor<T> out(r.kept, -std::numeric_limits<T>::infinity());
  std::vector<int64_t> offsets = broadcastOffsets(r.kept, x.shape);
  for (int64_t i = 0; i < x.size(); ++i) {
    T &peak = out[offsets[i]];
    if (x[i] > peak || std::isnan(x[i]))
      peak = x[i]; // NaN propagates, as torch.amax does
  }
  if (!keepDims)
    r.squeeze(out, x.shape);
  return out;
}

namespace {

/// Calls `visit(inputOffset, outputOffset)` for every element of a strided
/// slice of a tensor of `shape` (positions `starts + k * steps` along the
/// sliced axes, all positions along the others).
template <typename F>
void forEachSliced(const Shape &shape, const std::vector<int64_t> &axes,
                   const std::vector<int64_t> &starts, const std::vector<int64_t> &steps,
                   const Shape &sliced, F visit) {
  int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    start[axis] = starts[i];
    step[axis] = steps[i];
  }
  Shape strides = stridesOf(shape);
  Shape index(rank, 0);
  int64_t count = numElements(sliced);
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset += (start[d] + index[d] * step[d]) * strides[d];
    visit(offset, linear);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < sliced[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

template <typename T> Tensor<T> concat(const std::vector<const Tensor<T> *> &inputs, int64_t axis) {
  int64_t rank = inputs.front()->rank();
  if (axis < 0)
    axis += rank;
  Shape shape = inputs.front()->shape;
  shape[axis] = 0;
  for (const Tensor<T> *input : inputs)
    shape[axis] += input->shape[axis];
  Tensor<T> out(shape);
  // Rows: everything before `axis`; each input contributes a contiguous run
  // of (its size along axis) x (everything after axis) per row.
  int64_t rows = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    rows *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= shape[d];
  int64_t written = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (const Tensor<T> *input : inputs) {
      int64_t run = input->shape[axis] * inner;
      for (int64_t k = 0; k < run; ++k)
        out[written++] = (*input)[r * run + k];
    }
  return out;
}

template <typename T>
Tensor<T> slice(const Tensor<T> &x, const std::vector<int64_t> &axes,
                const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
                const std::vector<int64_t> &steps) {
  Shape shape = x.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + x.rank() : axes[i];
    shape[axis] = (ends[i] - starts[i] + steps[i] - 1) / steps[i];
  }
  Tensor<T> out(shape);
  forEachSliced(x.shape, axes, starts, steps, shape,
                [&](int64_t from, int64_t to) { out[to] = x[from]; });
  return out;
}

template <typename T>
Tensor<T> sliceGrad(const Tensor<T> &dy, const std::vector<int64_t> &axes,
                    const std::vector<int64_t> &starts, const std::vector<int64_t> &steps,
                    const Shape &shape) {
  Tensor<T> out(shape, T(0));
  forEachSliced(shape, axes, starts, steps, dy.shape,
                [&](int64_t to, int64_t from) { out[to] = dy[from]; });
  return out;
}

#define HET_LAYOUT_KERNELS(T)                                                                      \
  template Tensor<T> reduceMax(const Tensor<T> &, const std::vector<int64_t> &, bool);            \
  template Tensor<T> concat(const std::vector<const Tensor<T> *> &, int64_t);                     \
  template Tensor<T> slice(const Tensor<T> &, const std::vector<int64_t> &,                       \
                           const std::vector<int64_t> &, const std::vector<int64_t> &,            \
                           const std::vector<int64_t> &);                                        \
  template Tensor<T> sliceGrad(const Tensor<T> &, const std::vector<int64_t> &,                   \
                               const std::vector<int64_t> &, const std::vector<int64_t> &,        \
                               const Shape &);
HET_LAYOUT_KERNELS(float)
HET_LAYOUT_KERNELS(double)
HET_LAYOUT_KERNELS(long double)
#undef HET_LAYOUT_KERNELS

template Tensor<float> reduceSum(const Tensor<float> &, const std::vector<int64_t> &, bool, bool);
template Tensor<double> reduceSum(const Tensor<double> &, const std::vector<int64_t> &, bool, bool);
template Tensor<long double> reduceSum(const Tensor<long double> &, const std::vector<int64_t> &,
                                       bool, bool);
template Tensor<long double> transpose(const Tensor<long double> &, const std::vector<int64_t> &);
template Tensor<float> transpose(const Tensor<float> &, const std::vector<int64_t> &);
template Tensor<double> transpose(const Tensor<double> &, const std::vector<int64_t> &);
template Tensor<int64_t> transpose(const Tensor<int64_t> &, const std::vector<int64_t> &);

} // namespace het::eval
