//===- Tensor.h - the evaluator's working tensors ------------------*- C++ -*-===//
//
// A dense row-major tensor of T (float or double for float data, int64_t
// for indices). Deliberately plain: the evaluator is the golden reference,
// so its loops should be obviously right rather than fast.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_EVAL_TENSOR_H
#define HET_LIB_EVAL_TENSOR_H

#include "het/Eval/HostArray.h"

#include <cstdint>
#include <vector>

namespace het::eval {

using Shape = std::vector<int64_t>;

template <typename T> struct Tensor {
  Shape shape;
  std::vector<T> data;

  Tensor() = default;
  explicit Tensor(Shape shape, T fill = T())
      : shape(std::move(shape)), data(numElements(this->shape), fill) {}

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int64_t dim(int64_t i) const { return shape[i < 0 ? i + rank() : i]; }
  T &operator[](int64_t i) { return data[i]; }
  const T &operator[](int64_t i) const { return data[i]; }
};

/// Row-major strides of `shape`.
inline Shape stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Maps each element of an `out`-shaped tensor to the element of an
/// `in`-shaped tensor that NumPy broadcasting reads (stride 0 where `in` has
/// size 1 or lacks the dimension).
inline std::vector<int64_t> broadcastOffsets(const Shape &in, const Shape &out) {
  Shape inStrides = stridesOf(in);
  size_t lead = out.size() - in.size();
  Shape effective(out.size(), 0);
  for (size_t i = 0; i < in.size(); ++i)
    effective[lead + i] = in[i] == 1 ? 0 : inStrides[i];
  std::vector<int64_t> offsets(numElements(out));
  Shape index(out.size(), 0);
  for (size_t linear = 0; linear < offsets.size(); ++linear) {
    int64_t offset = 0;
    for (size_t d = 0; d < out.size(); ++d)
      offset += index[d] * effective[d];
    offsets[linear] = offset;
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      if (++index[d] < out[d])
        break;
      index[d] = 0;
    }
  }
  return offsets;
}

} // namespace het::eval

#endif // HET_LIB_EVAL_TENSOR_H
