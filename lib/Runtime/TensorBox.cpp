//===- TensorBox.cpp - a tensor's place in a larger one -------------------===//
#include "TensorBox.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

namespace het::rt {

using het::ckpt::Shard;

Box Box::whole(const std::vector<int64_t> &shape) {
  Box b;
  b.lo.assign(shape.size(), 0);
  b.hi = shape;
  return b;
}

int64_t Box::volume() const {
  int64_t v = 1;
  for (size_t d = 0; d < lo.size(); ++d)
    v *= std::max<int64_t>(0, hi[d] - lo[d]);
  return v;
}

std::vector<int64_t> Box::shape() const {
  std::vector<int64_t> s(lo.size());
  for (size_t d = 0; d < lo.size(); ++d)
    s[d] = std::max<int64_t>(0, hi[d] - lo[d]);
  return s;
}

std::vector<int64_t> wholeShape(const std::vector<int64_t> &shape, const Shard &shard) {
  return shard.present() ? shard.whole : shape;
}

Box boxOf(const std::vector<int64_t> &shape, const Shard &shard) {
  Box b = Box::whole(wholeShape(shape, shard));
  if (shard.present()) {
    b.lo[shard.axis] = shard.begin;
    b.hi[shard.axis] = shard.end;
    if (shard.hasRows()) {
      b.lo[0] = shard.rowBegin;
      b.hi[0] = shard.rowEnd;
    }
  }
  return b;
}

Shard shardOf(const Box &box, const std::vector<int64_t> &whole) {
  std::vector<int> partial;
  for (size_t d = 0; d < whole.size(); ++d)
    if (box.lo[d] != 0 || box.hi[d] != whole[d])
      partial.push_back(int(d));
  Shard s;
  if (partial.empty())
    return s;
  if (partial.size() > 2 || (partial.size() == 2 && partial[0] != 0))
    throw std::logic_error("a part of a tensor cut along axes other than a range and rows");
  s.axis = partial.back();
  s.begin = box.lo[s.axis];
  s.end = box.hi[s.axis];
  s.whole = whole;
  if (partial.size() == 2) {
    s.rowBegin = box.lo[0];
    s.rowEnd = box.hi[0];
  }
  return s;
}

Box intersect(const Box &a, const Box &b) {
  Box c = a;
  for (size_t d = 0; d < a.lo.size(); ++d) {
    c.lo[d] = std::max(a.lo[d], b.lo[d]);
    c.hi[d] = std::max(c.lo[d], std::min(a.hi[d], b.hi[d]));
  }
  return c;
}

void copyRegion(const uint8_t *src, const Box &from, uint8_t *dst, const Box &to,
                const Box &region, size_t elementBytes) {
  size_t rank = region.lo.size();
  if (rank == 0) {
    std::memcpy(dst, src, elementBytes);
    return;
  }
  if (region.volume() == 0)
    return;
  auto strides = [&](const Box &b) {
    std::vector<int64_t> s(rank, 1);
    for (size_t d = rank - 1; d > 0; --d)
      s[d - 1] = s[d] * (b.hi[d] - b.lo[d]);
    return s;
  };
  std::vector<int64_t> fromStride = strides(from), toStride = strides(to);
  size_t run = static_cast<size_t>(region.hi[rank - 1] - region.lo[rank - 1]) * elementBytes;
  std::function<void(size_t, int64_t, int64_t)> walk = [&](size_t d, int64_t fromAt,
                                                          int64_t toAt) {
    if (d == rank - 1) {
      fromAt += region.lo[d] - from.lo[d];
      toAt += region.lo[d] - to.lo[d];
      std::memcpy(dst + toAt * elementBytes, src + fromAt * elementBytes, run);
      return;
    }
    for (int64_t i = region.lo[d]; i < region.hi[d]; ++i)
      walk(d + 1, fromAt + (i - from.lo[d]) * fromStride[d], toAt + (i - to.lo[d]) * toStride[d]);
  };
  walk(0, 0, 0);
}

} // namespace het::rt
