// Binomial trees: log2(p) steps, so the choice for small messages, where
// latency dominates. All-reduce is a reduce to member 0 then a broadcast.
#include "Algorithms/Algorithms.h"

namespace hetccl {

void treeReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e, int root) {
  int p = m.size();
  int v = (m.me - root + p) % p;
  auto real = [&](int vr) { return m.ranks[(vr + root) % p]; };
  for (int mask = 1; mask < p; mask <<= 1) {
    if (v & mask) {
      c->fabric.run({P2POp::sendTo(real(v - mask), buf, count * e.size)});
      return;
    }
    if (v + mask < p) c->fabric.run({P2POp::recvReduce(real(v + mask), buf, count * e.size, e.fn, e.size)});
  }
}

void treeBroadcast(hetcclComm* c, const Members& m, char* buf, size_t bytes, int root) {
  int p = m.size();
  int v = (m.me - root + p) % p;
  auto real = [&](int vr) { return m.ranks[(vr + root) % p]; };
  int mask = 1;
  while (mask < p) {
    if (v & mask) {
      c->fabric.run({P2POp::recvFrom(real(v - mask), buf, bytes)});
      break;
    }
    mask <<= 1;
  }
  std::vector<P2POp> sends;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < p) sends.push_back(P2POp::sendTo(real(v + mask), buf, bytes));
  c->fabric.run(sends);
}

void treeAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  treeReduce(c, m, buf, count, e, 0);
  treeBroadcast(c, m, buf, count * e.size, 0);
}

} // namespace hetccl
