// Ring: bandwidth-optimal (each rank sends 2(p-1)/p of the buffer for an
// all-reduce) with p-1 latency steps per phase. A step's send and receive
// run in one progress loop, and the receive reduces straight out of the
// transport as bytes arrive, so a large step is pipelined without extra
// segmentation.
#include "Algorithms/Algorithms.h"

namespace hetccl {

static int mod(int a, int p) { return ((a % p) + p) % p; }

// Member k's chunk is [bounds[k], bounds[k+1]): even chunks, or the
// uneven ones of the V collectives.
static std::vector<size_t> evenBounds(size_t count, int p) {
  std::vector<size_t> bounds(p + 1);
  for (int k = 0; k <= p; ++k) bounds[k] = chunkBegin(count, k, p);
  return bounds;
}

void ringReduceScatterV(hetcclComm* c, const Members& m, char* buf, const size_t* bounds, const Elem& e) {
  int p = m.size(), i = m.me;
  if (p == 1) return;
  int next = m.ranks[mod(i + 1, p)], prev = m.ranks[mod(i - 1, p)];
  for (int s = 0; s < p - 1; ++s) {
    int sc = mod(i - s - 1, p), rc = mod(i - s - 2, p);
    size_t sb = bounds[sc], se = bounds[sc + 1], rb = bounds[rc], re = bounds[rc + 1];
    c->fabric.run({P2POp::sendTo(next, buf + sb * e.size, (se - sb) * e.size),
                   P2POp::recvReduce(prev, buf + rb * e.size, (re - rb) * e.size, e.fn, e.size)});
  }
}

void ringAllGatherV(hetcclComm* c, const Members& m, char* buf, const size_t* bounds, size_t es) {
  int p = m.size(), i = m.me;
  if (p == 1) return;
  int next = m.ranks[mod(i + 1, p)], prev = m.ranks[mod(i - 1, p)];
  for (int s = 0; s < p - 1; ++s) {
    int sc = mod(i - s, p), rc = mod(i - s - 1, p);
    size_t sb = bounds[sc], se = bounds[sc + 1], rb = bounds[rc], re = bounds[rc + 1];
    c->fabric.run({P2POp::sendTo(next, buf + sb * es, (se - sb) * es), P2POp::recvFrom(prev, buf + rb * es, (re - rb) * es)});
  }
}

void ringReduceScatter(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  ringReduceScatterV(c, m, buf, evenBounds(count, m.size()).data(), e);
}

void ringAllGather(hetcclComm* c, const Members& m, char* buf, size_t count, size_t es) {
  ringAllGatherV(c, m, buf, evenBounds(count, m.size()).data(), es);
}

void ringAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  ringReduceScatter(c, m, buf, count, e);
  ringAllGather(c, m, buf, count, e.size);
}

void chainBroadcast(hetcclComm* c, const Members& m, char* buf, size_t bytes, int root) {
  int p = m.size();
  if (p == 1) return;
  // Segments let member k forward segment j while receiving j+1.
  const size_t seg = 1 << 20;
  int pos = mod(m.me - root, p);
  int prev = pos > 0 ? m.ranks[mod(m.me - 1, p)] : -1;
  int next = pos + 1 < p ? m.ranks[mod(m.me + 1, p)] : -1;
  size_t nseg = (bytes + seg - 1) / seg;
  if (nseg == 0) nseg = 1; // one (empty) message keeps ranks in step
  for (size_t k = 0; k <= nseg; ++k) {
    std::vector<P2POp> ops;
    if (prev >= 0 && k < nseg) {
      size_t b = k * seg, n = std::min(bytes - std::min(bytes, b), seg);
      ops.push_back(P2POp::recvFrom(prev, buf + b, n));
    }
    if (next >= 0 && k >= 1) {
      size_t b = (k - 1) * seg, n = std::min(bytes - std::min(bytes, b), seg);
      ops.push_back(P2POp::sendTo(next, buf + b, n));
    }
    c->fabric.run(ops);
  }
}

} // namespace hetccl
