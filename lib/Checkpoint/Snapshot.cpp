//===- Snapshot.cpp - named tensors captured at one step ------------------===//
#include "het/Checkpoint/Snapshot.h"

namespace het::ckpt {

size_t dtypeSize(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "i8" || dtype == "u8") return 1;
  throw CheckpointError("unknown dtype '" + dtype +
                        "' (expected f64, f32, f16, bf16, i64, i32, i8 or u8)");
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void Tensor::check(const std::string &name) const {
  for (int64_t d : shape)
    if (d < 0) throw CheckpointError("tensor '" + name + "' has a negative dimension");
  uint64_t want = uint64_t(elements()) * dtypeSize(dtype);
  if (want != bytes.size())
    throw CheckpointError("tensor '" + name + "' holds " + std::to_string(bytes.size()) +
                          " bytes but its dtype and shape need " + std::to_string(want));
  checkShard(name);
}

void Tensor::checkShard(const std::string &name) const {
  if (!shard.present())
    return;
  const Shard &s = shard;
  bool fits = s.whole.size() == shape.size() && s.axis < int(shape.size()) && s.begin >= 0 &&
              s.end - s.begin == (shape.empty() ? 0 : shape[s.axis]) &&
              s.end <= s.whole[s.axis];
  // Rows of a slice along another axis: their count is the stored rows.
  bool rows = s.hasRows();
  if (fits && rows)
    fits = s.axis > 0 && s.rowBegin >= 0 && s.rowEnd - s.rowBegin == shape[0] &&
           s.rowEnd <= s.whole[0];
  for (size_t d = 0; fits && d < shape.size(); ++d)
    fits = int(d) == s.axis || (rows && d == 0) || shape[d] == s.whole[d];
  if (!fits)
    throw CheckpointError("tensor '" + name + "' does not fit its shard (indices " +
                          std::to_string(s.begin) + ".." + std::to_string(s.end) + " of axis " +
                          std::to_string(s.axis) +
                          (rows ? ", rows " + std::to_string(s.rowBegin) + ".." +
                                      std::to_string(s.rowEnd)
                                : std::string()) +
                          " of the whole tensor)");
}

const Tensor &Snapshot::at(const std::string &name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw CheckpointError("snapshot has no tensor '" + name + "'");
  return it->second;
}

size_t Snapshot::totalBytes() const {
  size_t n = 0;
  for (auto &kv : tensors) n += kv.second.bytes.size();
  return n;
}

} // namespace het::ckpt
