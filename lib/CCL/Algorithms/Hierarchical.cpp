// Hierarchical all-reduce, as in HETHUB and Horovod: ranks are grouped by
// (host, device kind). With equal group sizes L: reduce-scatter inside each
// group (fast links), all-reduce chunk i across the groups among the ranks
// of local index i (the slow links carry only 1/L of the buffer each, in
// parallel), then all-gather inside each group. With unequal groups: reduce
// to each group's leader, all-reduce among leaders, broadcast in the group.
#include "Algorithms/Algorithms.h"

namespace hetccl {

void hierAllReduce(hetcclComm* c, char* buf, size_t count, const Elem& e) {
  const auto& groups = c->groups;
  int G = int(groups.size());
  int g = c->groupOfRank[c->rank];
  Members intra = membersOf(c, groups[g]);
  if (G == 1) {
    ringAllReduce(c, intra, buf, count, e);
    return;
  }
  bool uniform = true;
  for (const auto& gr : groups) uniform &= gr.size() == groups[0].size();
  if (uniform) {
    int L = int(groups[0].size());
    int li = c->localIndex[c->rank];
    ringReduceScatter(c, intra, buf, count, e);
    std::vector<int> peers;
    for (const auto& gr : groups) peers.push_back(gr[li]);
    size_t b = chunkBegin(count, li, L), n = chunkBegin(count, li + 1, L) - b;
    Members inter = membersOf(c, peers);
    ringAllReduce(c, inter, buf + b * e.size, n, e);
    ringAllGather(c, intra, buf, count, e.size);
    return;
  }
  treeReduce(c, intra, buf, count, e, 0);
  if (c->localIndex[c->rank] == 0) {
    std::vector<int> leaders;
    for (const auto& gr : groups) leaders.push_back(gr[0]);
    ringAllReduce(c, membersOf(c, leaders), buf, count, e);
  }
  treeBroadcast(c, intra, buf, count * e.size, 0);
}

} // namespace hetccl
