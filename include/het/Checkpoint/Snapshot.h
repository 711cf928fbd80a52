//===- Snapshot.h - named tensors captured at one training step -*- C++ -*-===//
//
// A snapshot owns its bytes: the training loop copies its state into one and
// hands it to the checkpointer, so the background writer never reads memory
// the loop is still updating.
//
#ifndef HET_CHECKPOINT_SNAPSHOT_H
#define HET_CHECKPOINT_SNAPSHOT_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace het::ckpt {

/// Every failure of the library (bad input, I/O error, invalid file).
class CheckpointError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Element size in bytes of a dtype name ("f32", "f64", "f16", "bf16",
/// "i8", "u8", "i32", "i64"); throws CheckpointError for anything else.
size_t dtypeSize(const std::string &dtype);

/// Where a tensor sits in a larger one it is a part of (a tensor-parallel
/// rank's slice of a parameter, a replica's block of rows of optimizer
/// state): indices [begin, end) along `axis` of a tensor of shape `whole`,
/// all other dimensions whole, except that a slice along another axis than
/// 0 may also hold only rows [rowBegin, rowEnd) (a replica's block of a
/// tensor-parallel slice: ZeRO under tensor parallelism).
struct Shard {
  int axis = -1; // -1: the tensor is whole
  int64_t begin = 0, end = 0;
  std::vector<int64_t> whole;
  int64_t rowBegin = 0, rowEnd = -1; // rowEnd < 0: every row

  bool present() const { return axis >= 0; }
  bool hasRows() const { return rowEnd >= 0; }
};

struct Tensor {
  std::string dtype = "f32";
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  Shard shard;

  int64_t elements() const;
  /// Throws unless bytes.size() == elements() * dtypeSize(dtype) and the
  /// shard (if any) fits.
  void check(const std::string &name) const;
  /// Throws unless the shard (if any) has the tensor's rank and shape, and
  /// lies inside its whole tensor.
  void checkShard(const std::string &name) const;
};

/// name -> tensor, ordered by name so files and hashes are reproducible.
struct Snapshot {
  std::map<std::string, Tensor> tensors;
  /// What the writer says about the snapshot (who wrote it, in which job
  /// layout), kept in the manifest.
  std::map<std::string, std::string> meta;

  /// Copies `count` elements of `data` in as tensor `name` (shape {count}
  /// unless given).
  template <typename T>
  void put(const std::string &name, const std::string &dtype, const T *data, size_t count,
           std::vector<int64_t> shape = {}) {
    Tensor &t = tensors[name];
    t.dtype = dtype;
    t.shape = shape.empty() ? std::vector<int64_t>{int64_t(count)} : std::move(shape);
    const auto *p = reinterpret_cast<const uint8_t *>(data);
    t.bytes.assign(p, p + count * sizeof(T));
    t.check(name);
  }
  /// The tensor `name`; throws CheckpointError naming it if it is absent.
  const Tensor &at(const std::string &name) const;
  size_t totalBytes() const;
};

} // namespace het::ckpt

#endif
