//===- PipelineLayout.cpp -------------------------------------------------===//

#include "PipelineLayout.h"

#include <algorithm>
#include <map>

namespace het::rt {

bool PipelineLayout::build(const ModelInfo &info, bool byGroup, PipelineLayout &layout,
                           std::string &error) {
  const size_t S = info.stages.size();
  layout = PipelineLayout();
  layout.first.resize(S);
  layout.offset.resize(S);
  layout.shares.resize(S);
  layout.tp.resize(S);
  const int64_t microBatch = info.globalBatch / info.microBatches;
  // Where each group's ranks start, and the next free one (by group).
  std::map<std::string, int> next, end;
  int total = 0;
  if (byGroup) {
    for (const auto &[name, devices] : info.groups) {
      next[name] = total;
      end[name] = total + devices;
      total += devices;
    }
    layout.places.resize(total);
  }
  for (size_t j = 0; j < S; ++j) {
    const StageInfo &st = info.stages[j];
    layout.tp[j] = st.tensorParallel;
    int64_t samples = 0;
    for (size_t k = 0; k < st.replicaGroups.size(); ++k) {
      const ReplicaGroupInfo &g = st.replicaGroups[k];
      if (g.samples <= 0) {
        error = "stage " + st.name + ": the replicas on " + g.group +
                " have no share of the micro-batch in the description";
        return false;
      }
      for (int r = 0; r < g.count; ++r) {
        int rank;
        if (byGroup) {
          if (!next.count(g.group)) {
            error = "stage " + st.name + " runs on group " + g.group +
                    ", which the cluster the ranks were started for does not have";
            return false;
          }
          rank = next[g.group];
          next[g.group] += st.tensorParallel;
          if (next[g.group] > end[g.group]) {
            int devices = 0;
            for (const auto &[name, count] : info.groups)
              if (name == g.group)
                devices = count;
            error = "the stages use more devices of group " + g.group + " than its " +
                    std::to_string(devices);
            return false;
          }
        } else {
          rank = total;
          total += st.tensorParallel;
          layout.places.resize(total);
        }
        int replica = static_cast<int>(layout.first[j].size());
        layout.first[j].push_back(rank);
        layout.offset[j].push_back(samples);
        layout.shares[j].push_back(g.samples);
        samples += g.samples;
        for (int t = 0; t < st.tensorParallel; ++t)
          layout.places[rank + t] = {static_cast<int>(j), replica, t, static_cast<int>(k)};
      }
    }
    if (samples != microBatch) {
      error = "stage " + st.name + ": its replicas' shares add up to " + std::to_string(samples) +
              " samples, not the micro-batch's " + std::to_string(microBatch);
      return false;
    }
  }
  return true;
}

int PipelineLayout::rankOf(int stage, int replica, int device) const {
  return first[stage][replica] + device;
}

std::vector<Transfer> PipelineLayout::sends(const ChannelInfo &c, const RankPlace &me) const {
  std::vector<Transfer> out;
  const int from = c.from, to = c.to;
  const int Tfrom = tp[from], Tto = tp[to];
  // Every receiving device whose sender device is this one.
  auto devices = [&](auto &&each) {
    for (int t = me.tp; t < Tto; t += Tfrom)
      each(t);
  };
  if (c.rowsPerSample > 0) {
    int64_t lo0 = offset[from][me.replica], hi0 = lo0 + shares[from][me.replica];
    for (int q = 0; q < replicas(to); ++q) {
      int64_t lo = std::max(lo0, offset[to][q]), hi = std::min(hi0, offset[to][q] + shares[to][q]);
      if (lo < hi)
        devices([&](int t) { out.push_back({rankOf(to, q, t), lo - lo0, hi - lo}); });
    }
  } else if (c.rowsPerSample == 0 && c.backward) {
    // A partial sum: to one receiver, which adds up its senders'.
    devices([&](int t) { out.push_back({rankOf(to, me.replica % replicas(to), t), 0, -1}); });
  } else if (c.rowsPerSample == 0) {
    // The same on every sender: each receiver takes it from one.
    for (int q = me.replica; q < replicas(to); q += replicas(from))
      devices([&](int t) { out.push_back({rankOf(to, q, t), 0, -1}); });
  } else {
    devices([&](int t) { out.push_back({rankOf(to, me.replica, t), 0, -1}); });
  }
  return out;
}

std::vector<Transfer> PipelineLayout::receives(const ChannelInfo &c, const RankPlace &me,
                                               bool &accumulate) const {
  std::vector<Transfer> out;
  accumulate = false;
  const int from = c.from, to = c.to;
  const int device = me.tp % tp[from];
  if (c.rowsPerSample > 0) {
    int64_t lo0 = offset[to][me.replica], hi0 = lo0 + shares[to][me.replica];
    for (int q = 0; q < replicas(from); ++q) {
      int64_t lo = std::max(lo0, offset[from][q]),
              hi = std::min(hi0, offset[from][q] + shares[from][q]);
      if (lo < hi)
        out.push_back({rankOf(from, q, device), lo - lo0, hi - lo});
    }
  } else if (c.rowsPerSample == 0 && c.backward) {
    accumulate = true;
    for (int q = me.replica; q < replicas(from); q += replicas(to))
      out.push_back({rankOf(from, q, device), 0, -1});
  } else if (c.rowsPerSample == 0) {
    out.push_back({rankOf(from, me.replica % replicas(from), device), 0, -1});
  } else {
    out.push_back({rankOf(from, me.replica, device), 0, -1});
  }
  return out;
}

} // namespace het::rt
