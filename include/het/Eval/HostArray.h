//===- HostArray.h - an n-d array on the host, as files hold it ---*- C++ -*-===//
//
// The currency between the reference evaluator and the outside world
// (.npy/.npz files, tests, the training driver). Float data is kept in
// long double, which holds every f16/bf16/f32/f64 value exactly, so
// converting in and out of the evaluator's working precision (up to x87
// extended, used by gradient checks) loses nothing.
//
//===----------------------------------------------------------------------===//

#ifndef HET_EVAL_HOSTARRAY_H
#define HET_EVAL_HOSTARRAY_H

#include <cstdint>
#include <string>
#include <vector>

namespace het::eval {

using HostFloat = long double;

/// Element kinds a host array can hold.
enum class ElementKind { F32, F64, I64 };

struct HostArray {
  ElementKind kind = ElementKind::F32;
  std::vector<int64_t> shape;
  std::vector<HostFloat> floats; // when kind is F32 or F64
  std::vector<int64_t> integers; // when kind is I64

  bool isInteger() const { return kind == ElementKind::I64; }
  int64_t numElements() const;
  /// e.g. "f32[8x3x32x32]" for messages.
  std::string describe() const;
};

int64_t numElements(const std::vector<int64_t> &shape);
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace het::eval

#endif // HET_EVAL_HOSTARRAY_H
