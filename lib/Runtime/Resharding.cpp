//===- Resharding.cpp - resume from a checkpoint of any layout ------------===//
#include "Resharding.h"
#include "TensorBox.h"

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

/// What one rank directory says of a step: its manifest, or why not.
struct Described {
  bool ok = false;
  Snapshot snapshot; // tensors without bytes, and meta
  std::string problem;
};

/// One layout's checkpoint of one step: `writers` wrote it (`legacy`: a
/// snapshot from before layouts were recorded, usable by its own rank
/// only). Throws Unusable, or CheckpointError when the checkpoint can never
/// hold this rank's state.
ReshardedState loadSet(const std::string &root, int rank, const std::string &layout,
                       const std::vector<NeededTensor> &needs, int64_t step,
                       const std::vector<int> &writers, const std::string &writerLayout,
                       bool legacy, std::map<int, Described> &described);

/// One step's attempt; throws Unusable, or CheckpointError when the
/// checkpoint can never hold this rank's state. Each layout that wrote the
/// step (a rank directory's snapshot names its own) is tried, the lowest
/// rank's first: an earlier job's leftovers never hide a complete set.
ReshardedState loadStep(const std::string &root, int rank, const std::string &layout,
                        const std::vector<NeededTensor> &needs, int64_t step,
                        const std::map<int, std::vector<int64_t>> &dirs) {
  std::map<int, Described> described;
  std::vector<std::pair<std::string, std::vector<int>>> layouts; // in order of first rank
  for (const auto &[k, steps] : dirs) {
    if (!std::binary_search(steps.begin(), steps.end(), step))
      continue;
    Described &d = described[k];
    try {
      d.snapshot = het::ckpt::describeCheckpoint(rankDirectory(root, k), step);
      d.ok = true;
    } catch (const std::exception &e) { // damaged: CheckpointError, or JSON of the wrong type
      d.problem = k == rank ? e.what() : "rank " + std::to_string(k) + "'s checkpoint: " +
                                             std::string(e.what());
      continue;
    }
    const auto &meta = d.snapshot.meta;
    if (!meta.count("writers"))
      continue; // written before snapshots named their layout
    std::string id = meta.count("layout") ? meta.at("layout") : "";
    bool seen = false;
    for (const auto &l : layouts)
      seen = seen || l.first == id;
    if (!seen)
      layouts.push_back({id, parseRanks(meta.at("writers"))});
  }
  std::vector<std::string> reasons;
  for (const auto &[id, writers] : layouts) {
    try {
      return loadSet(root, rank, layout, needs, step, writers, id, false, described);
    } catch (const Unusable &u) {
      reasons.push_back(u.reason);
    }
  }
  // A snapshot from before layouts were recorded: its own rank's only.
  if (auto it = described.find(rank);
      it != described.end() && it->second.ok && !it->second.snapshot.meta.count("writers")) {
    try {
      return loadSet(root, rank, layout, needs, step, {rank}, "", true, described);
    } catch (const Unusable &u) {
      reasons.push_back(u.reason);
    }
  }
  if (reasons.empty()) {
    // No manifest of this step could be read at all.
    for (const auto &[k, d] : described)
      if (!d.ok) {
        reasons.push_back(d.problem);
        break;
      }
  }
  throw Unusable{reasons.empty() ? "no usable checkpoint of this step" : reasons.front()};
}

ReshardedState loadSet(const std::string &root, int rank, const std::string &layout,
                       const std::vector<NeededTensor> &needs, int64_t step,
                       const std::vector<int> &writers, const std::string &writerLayout,
                       bool legacy, std::map<int, Described> &described) {
  for (int w : writers) {
    auto it = described.find(w);
    if (it == described.end())
      throw Unusable{"rank " + std::to_string(w) + " of the layout that wrote it has no checkpoint of it"};
    if (!it->second.ok)
      throw Unusable{it->second.problem};
    const auto &meta = it->second.snapshot.meta;
    std::string theirs = meta.count("layout") ? meta.at("layout") : "";
    if (!legacy && theirs != writerLayout)
      throw Unusable{"rank " + std::to_string(w) + "'s checkpoint of it was written by another job layout"};
  }
  const std::map<std::string, std::string> meta = described.at(writers.front()).snapshot.meta;
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
      auto it = described.at(w).snapshot.tensors.find(need.name);
      if (it == described.at(w).snapshot.tensors.end())
        continue;
      anywhere = true;
      const Tensor &t = it->second;
      if (legacy) {
        // No shard ranges were recorded: the rank's own part, as it is laid
        // out now (a scalar was stored as {1}).
        int64_t stored = 1, held = 1;
        for (int64_t d : t.shape)
          stored *= d;
        for (int64_t d : need.shape)
          held *= d;
        if (t.dtype != need.dtype || stored != held)
          throw CheckpointError(where + " holds '" + need.name + "' as " + t.dtype + " " +
                                shapeText(t.shape) + ", this rank's model has " + need.dtype +
                                " " + shapeText(need.shape) + ": it was written for another model");
        pieces.push_back({w, want});
        reads.insert(w);
        covered += want.volume();
        break;
      }
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
  if ((writerLayout == layout || legacy) && reads == std::set<int>{rank})
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
