// Sharded parameter server: member i is the server of chunk i. Every member
// pushes chunk j to server j at once, each server sums what it got in member
// order (so the result does not depend on arrival order), then every server
// pushes its chunk to everyone. Two steps regardless of p, at the price of
// p-1 concurrent flows into each server.
#include "Algorithms/Algorithms.h"

#include <cstring>

namespace hetccl {

void psReduceScatter(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  int p = m.size(), me = m.me;
  if (p == 1) return;
  size_t mb = chunkBegin(count, me, p), mn = chunkBegin(count, me + 1, p) - mb;
  size_t slot = mn * e.size;
  char* tmp = c->scratchBuf(2, slot * size_t(p) + 1);
  std::vector<P2POp> ops;
  for (int j = 0; j < p; ++j) {
    if (j == me) continue;
    size_t b = chunkBegin(count, j, p), n = chunkBegin(count, j + 1, p) - b;
    ops.push_back(P2POp::sendTo(m.ranks[j], buf + b * e.size, n * e.size));
    ops.push_back(P2POp::recvFrom(m.ranks[j], tmp + size_t(j) * slot, slot));
  }
  c->fabric.run(ops);
  // Reduce in member order: acc = c_0 op c_1 op ... so every server and
  // every algorithm sees the same association where it matters.
  char* mine = buf + mb * e.size;
  memcpy(tmp + size_t(me) * slot, mine, slot);
  memcpy(mine, tmp, slot);
  for (int j = 1; j < p; ++j) e.fn(mine, tmp + size_t(j) * slot, mn);
}

void psAllGather(hetcclComm* c, const Members& m, char* buf, size_t count, size_t es) {
  int p = m.size(), me = m.me;
  if (p == 1) return;
  size_t mb = chunkBegin(count, me, p), mn = chunkBegin(count, me + 1, p) - mb;
  std::vector<P2POp> ops;
  for (int j = 0; j < p; ++j) {
    if (j == me) continue;
    size_t b = chunkBegin(count, j, p), n = chunkBegin(count, j + 1, p) - b;
    ops.push_back(P2POp::sendTo(m.ranks[j], buf + mb * es, mn * es));
    ops.push_back(P2POp::recvFrom(m.ranks[j], buf + b * es, n * es));
  }
  c->fabric.run(ops);
}

void psAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  psReduceScatter(c, m, buf, count, e);
  psAllGather(c, m, buf, count, e.size);
}

} // namespace hetccl
