//===- Resharding.cpp - resume from a checkpoint of any layout ------------===//
#include "Resharding.h"

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <set>
#include <sstream>

namespace het::rt {

using het::ckpt::CheckpointError;
using het::ckpt::Shard;
using het::ckpt::Snapshot;
using het::ckpt::Tensor;

std::string rankDirectory(const std::string &root, int rank) {
  return root + "/rank" + std::to_string(rank);
}

namespace {

/// The rank directories under `root`: rank -> its steps.
std::map<int, std::vector<int64_t>> rankDirectories(const std::string &root) {
  std::map<int, std::vector<int64_t>> ranks;
  DIR *d = ::opendir(root.c_str());
  if (!d)
    return ranks;
  while (dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() <= 4 || n.compare(0, 4, "rank") != 0 ||
        n.find_first_not_of("0123456789", 4) != std::string::npos || n.size() > 12)
      continue;
    int k = std::stoi(n.substr(4));
    ranks[k] = het::ckpt::listSteps(rankDirectory(root, k));
  }
  ::closedir(d);
  return ranks;
}

std::vector<int> parseRanks(const std::string &text) {
  std::vector<int> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    ranks.push_back(std::stoi(item));
  return ranks;
}

/// A tensor's place in its whole one: [lo, hi) per dimension.
struct Box {
  std::vector<int64_t> lo, hi;
  int64_t volume() const {
    int64_t v = 1;
    for (size_t d = 0; d < lo.size(); ++d)
      v *= std::max<int64_t>(0, hi[d] - lo[d]);
    return v;
  }
  bool operator==(const Box &o) const { return lo == o.lo && hi == o.hi; }
};

std::vector<int64_t> wholeShape(const std::vector<int64_t> &shape, const Shard &shard) {
  return shard.present() ? shard.whole : shape;
}

Box boxOf(const std::vector<int64_t> &shape, const Shard &shard) {
  Box b;
  b.lo.assign(shape.size(), 0);
  b.hi = wholeShape(shape, shard);
  if (shard.present()) {
    b.lo[shard.axis] = shard.begin;
    b.hi[shard.axis] = shard.end;
  }
  return b;
}

Box intersect(const Box &a, const Box &b) {
  Box c = a;
  for (size_t d = 0; d < a.lo.size(); ++d) {
    c.lo[d] = std::max(a.lo[d], b.lo[d]);
    c.hi[d] = std::max(c.lo[d], std::min(a.hi[d], b.hi[d]));
  }
  return c;
}

/// Copies the elements of `region` from `src` (holding box `from`) to `dst`
/// (holding box `to`), both row-major.
void copyRegion(const uint8_t *src, const Box &from, uint8_t *dst, const Box &to,
                const Box &region, size_t elementBytes) {
  size_t rank = region.lo.size();
  if (rank == 0) {
    std::memcpy(dst, src, elementBytes);
    return;
  }
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

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::string rankList(const std::set<int> &ranks) {
  std::string s;
  for (int r : ranks)
    s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

/// Why step `step` cannot be used (damage or an incomplete set): the next
/// older step is tried.
struct Unusable {
  std::string reason;
};

/// One step's attempt; throws Unusable, or CheckpointError when the
/// checkpoint can never hold this rank's state.
ReshardedState loadStep(const std::string &root, int rank, const std::string &layout,
                        const std::vector<NeededTensor> &needs, int64_t step,
                        const std::map<int, std::vector<int64_t>> &dirs) {
  auto has = [&](int k) {
    auto it = dirs.find(k);
    return it != dirs.end() && std::binary_search(it->second.begin(), it->second.end(), step);
  };
  auto describe = [&](int k) {
    try {
      return het::ckpt::describeCheckpoint(rankDirectory(root, k), step);
    } catch (const std::exception &e) { // damaged: CheckpointError, or JSON of the wrong type
      throw Unusable{k == rank ? e.what() : "rank " + std::to_string(k) + "'s checkpoint: " +
                                                std::string(e.what())};
    }
  };
  // Who wrote this step: the lowest rank's snapshot names them all.
  int first = -1;
  for (const auto &[k, steps] : dirs)
    if (has(k)) {
      first = k;
      break;
    }
  std::map<int, Snapshot> described;
  described[first] = describe(first);
  const std::map<std::string, std::string> &meta = described[first].meta;
  std::vector<int> writers;
  if (auto it = meta.find("writers"); it != meta.end()) {
    writers = parseRanks(it->second);
  } else {
    // Written before snapshots named their layout: a rank's own directory
    // is all it can use.
    if (!has(rank))
      throw Unusable{"no checkpoint of this step in this rank's directory"};
    writers = {rank};
    described[rank] = describe(rank);
  }
  std::string writerLayout = meta.count("layout") ? meta.at("layout") : "";
  for (int w : writers) {
    if (!has(w))
      throw Unusable{"rank " + std::to_string(w) + " of the layout that wrote it has no checkpoint of it"};
    if (!described.count(w))
      described[w] = describe(w);
    std::string theirs = described[w].meta.count("layout") ? described[w].meta.at("layout") : "";
    if (theirs != writerLayout)
      throw Unusable{"rank " + std::to_string(w) + "'s checkpoint of it was written by another job layout"};
  }
  // Sources in order of preference: this rank's own directory, then by rank.
  std::vector<int> order = writers;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return (a == rank) > (b == rank) || ((a == rank) == (b == rank) && a < b);
  });
  std::string where = "the checkpoint of step " + std::to_string(step) + " in " + root;
  struct Piece {
    int writer;
    Box box;
  };
  std::map<std::string, std::vector<Piece>> chosen;
  std::set<int> reads;
  for (const NeededTensor &need : needs) {
    Box want = boxOf(need.shape, need.shard);
    std::vector<int64_t> whole = wholeShape(need.shape, need.shard);
    std::vector<Piece> &pieces = chosen[need.name];
    int64_t covered = 0;
    bool anywhere = false;
    for (int w : order) {
      auto it = described[w].tensors.find(need.name);
      if (it == described[w].tensors.end())
        continue;
      anywhere = true;
      const Tensor &t = it->second;
      if (t.dtype != need.dtype || wholeShape(t.shape, t.shard) != whole)
        throw CheckpointError(where + " holds '" + need.name + "' as " + t.dtype + " " +
                              shapeText(wholeShape(t.shape, t.shard)) + " (rank " +
                              std::to_string(w) + "), this rank's model has " + need.dtype + " " +
                              shapeText(whole) + ": it was written for another model");
      Box box = boxOf(t.shape, t.shard);
      Box common = intersect(box, want);
      if (common.volume() == 0 && want.volume() > 0)
        continue;
      bool duplicate = false; // a replica's copy of a piece already taken
      for (const Piece &p : pieces)
        duplicate = duplicate || p.box == box;
      if (duplicate)
        continue;
      pieces.push_back({w, box});
      reads.insert(w);
      covered += common.volume();
    }
    if (!anywhere)
      throw CheckpointError(where + " has no tensor '" + need.name +
                            "' (this rank's state needs it): it was written for another model "
                            "or optimizer");
    if (covered != want.volume())
      throw CheckpointError(where + ": its pieces of '" + need.name + "' cover " +
                            std::to_string(covered) + " of the " + std::to_string(want.volume()) +
                            " elements this rank needs");
  }
  // Read (and verify) the snapshots the pieces come from.
  ReshardedState state;
  state.step = step;
  state.meta = meta;
  std::map<int, Snapshot> loaded;
  bool full = true;
  int64_t base = -1;
  for (int w : reads) {
    try {
      loaded[w] = het::ckpt::loadCheckpoint(rankDirectory(root, w), step, w == rank ? &full : nullptr,
                                            w == rank ? &base : nullptr);
    } catch (const std::exception &e) {
      throw Unusable{w == rank ? e.what()
                               : "rank " + std::to_string(w) + "'s checkpoint: " + std::string(e.what())};
    }
  }
  for (const NeededTensor &need : needs) {
    Box want = boxOf(need.shape, need.shard);
    size_t elementBytes = het::ckpt::dtypeSize(need.dtype);
    std::vector<uint8_t> &bytes = state.tensors[need.name];
    bytes.assign(static_cast<size_t>(want.volume()) * elementBytes, 0);
    for (const Piece &p : chosen[need.name]) {
      const Tensor &t = loaded[p.writer].at(need.name);
      copyRegion(t.bytes.data(), p.box, bytes.data(), want, intersect(p.box, want), elementBytes);
    }
  }
  state.found = true;
  if (writerLayout == layout && reads == std::set<int>{rank})
    state.how = full ? "full" : "incremental on full step " + std::to_string(base);
  else
    state.how = "resharded from a checkpoint of " + std::to_string(writers.size()) +
                (writers.size() == 1 ? " rank" : " ranks") +
                (meta.count("stages") ? " (" + meta.at("stages") + ")" : "") + ": read rank" +
                (reads.size() == 1 ? " " : "s ") + rankList(reads);
  return state;
}

} // namespace

ReshardedState loadForLayout(const std::string &root, int rank, const std::string &layout,
                             const std::vector<NeededTensor> &needs, int64_t maxStep) {
  std::map<int, std::vector<int64_t>> dirs = rankDirectories(root);
  std::set<int64_t> steps;
  for (const auto &[k, list] : dirs)
    steps.insert(list.begin(), list.end());
  ReshardedState result;
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (maxStep >= 0 && *it > maxStep)
      continue;
    try {
      ReshardedState state = loadStep(root, rank, layout, needs, *it, dirs);
      state.skipped = std::move(result.skipped);
      return state;
    } catch (const Unusable &u) {
      result.skipped.push_back({*it, u.reason});
    }
  }
  return result;
}

} // namespace het::rt
