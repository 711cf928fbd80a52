// The collectives on buffers in host memory, one algorithm choice each
// (Algorithms/ holds the algorithms); Api.cpp checks the arguments and
// stages device buffers through host memory around these.
#include "HostCollectives.h"

#include "Algorithms/Algorithms.h"
#include "Common/Error.h"
#include "Compression/Compression.h"

#include <cstring>

namespace hetccl {

namespace {
bool isPow2(int p) { return (p & (p - 1)) == 0; }
} // namespace

void hostAllReduce(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op,
                   const void* key) {
  size_t bytes = count * dtypeSize(dt);
  char* buf = static_cast<char*>(recv);
  Elem e = elemOf(dt, op);
  hetcclCompression_t z = c->compression;
  // Compression applies to f32 sums/averages only; every other call (ints,
  // min/max, the library's own barriers) is exact.
  bool compressed =
      z != hetcclCompressNone && dt == hetcclFloat32 && (op == hetcclSum || op == hetcclAvg) && c->nranks > 1;
  hetcclAlgo_t a = compressed ? hetcclAlgoRing : allReduceAlgorithm(c, bytes);
  if (!compressed && (a == hetcclAlgoOneShot || a == hetcclAlgoTwoShot)) {
    // The board algorithms read `send` themselves, so no copy into recv
    // first (a third of a 4 KiB one-shot call's copies).
    (a == hetcclAlgoOneShot ? oneShotAllReduce : twoShotAllReduce)(c, static_cast<const char*>(send), buf, count, e);
    if (op == hetcclAvg) finalizeAvg(buf, count, dt, c->nranks);
    return;
  }
  if (send != recv) memmove(recv, send, bytes);
  if (compressed) {
    if (z == hetcclCompressTopK)
      topkAllReduce(c, reinterpret_cast<float*>(buf), count, c->topkRatio, key);
    else
      compressedRingAllReduce(c, reinterpret_cast<float*>(buf), count, z);
  } else {
    Members m = allMembers(c);
    switch (a) {
    case hetcclAlgoTree: treeAllReduce(c, m, buf, count, e); break;
    case hetcclAlgoHalvingDoubling: hdAllReduce(c, m, buf, count, e); break;
    case hetcclAlgoHierarchical: hierAllReduce(c, buf, count, e); break;
    case hetcclAlgoParameterServer: psAllReduce(c, m, buf, count, e); break;
    default: ringAllReduce(c, m, buf, count, e); break;
    }
  }
  if (op == hetcclAvg) finalizeAvg(buf, count, dt, c->nranks);
}

void hostAllGather(hetcclComm* c, const void* send, void* recv, size_t sendcount, hetcclDataType_t dt) {
  size_t es = dtypeSize(dt), block = sendcount * es;
  char* dst = static_cast<char*>(recv);
  if (send != dst + size_t(c->rank) * block) memmove(dst + size_t(c->rank) * block, send, block);
  size_t total = sendcount * size_t(c->nranks);
  Members m = allMembers(c);
  hetcclAlgo_t a = c->algo;
  if (a == hetcclAlgoAuto) a = isPow2(c->nranks) && total * es < (256u << 10) ? hetcclAlgoHalvingDoubling : hetcclAlgoRing;
  switch (a) {
  case hetcclAlgoHalvingDoubling:
    if (isPow2(c->nranks)) hdAllGather(c, m, dst, total, es);
    else ringAllGather(c, m, dst, total, es);
    break;
  case hetcclAlgoParameterServer: psAllGather(c, m, dst, total, es); break;
  case hetcclAlgoTree: {
    // Gather to rank 0, then a binomial broadcast of the whole buffer.
    std::vector<P2POp> ops;
    if (c->rank == 0) {
      for (int r = 1; r < c->nranks; ++r) ops.push_back(P2POp::recvFrom(r, dst + size_t(r) * block, block));
    } else {
      ops.push_back(P2POp::sendTo(0, dst + size_t(c->rank) * block, block));
    }
    c->fabric.run(ops);
    treeBroadcast(c, m, dst, total * es, 0);
    break;
  }
  default: ringAllGather(c, m, dst, total, es); break; // ring, hierarchical
  }
}

void hostReduceScatter(hetcclComm* c, const void* send, void* recv, size_t recvcount, hetcclDataType_t dt,
                       hetcclRedOp_t op) {
  size_t es = dtypeSize(dt), chunk = recvcount * es, total = recvcount * size_t(c->nranks);
  char* work = c->scratchBuf(1, total * es + 1);
  memcpy(work, send, total * es);
  Members m = allMembers(c);
  Elem e = elemOf(dt, op);
  hetcclAlgo_t a = c->algo;
  if (a == hetcclAlgoAuto) a = isPow2(c->nranks) && total * es < (256u << 10) ? hetcclAlgoHalvingDoubling : hetcclAlgoRing;
  switch (a) {
  case hetcclAlgoHalvingDoubling:
    if (isPow2(c->nranks)) hdReduceScatter(c, m, work, total, e);
    else ringReduceScatter(c, m, work, total, e);
    break;
  case hetcclAlgoParameterServer: psReduceScatter(c, m, work, total, e); break;
  case hetcclAlgoTree: {
    treeReduce(c, m, work, total, e, 0);
    std::vector<P2POp> ops;
    if (c->rank == 0) {
      for (int r = 1; r < c->nranks; ++r) ops.push_back(P2POp::sendTo(r, work + size_t(r) * chunk, chunk));
    } else {
      ops.push_back(P2POp::recvFrom(0, work + size_t(c->rank) * chunk, chunk));
    }
    c->fabric.run(ops);
    break;
  }
  default: ringReduceScatter(c, m, work, total, e); break;
  }
  memmove(recv, work + size_t(c->rank) * chunk, chunk);
  if (op == hetcclAvg) finalizeAvg(recv, recvcount, dt, c->nranks);
}

// The V collectives: rank r's block is counts[r] elements at the sum of the
// counts before it; always the ring (its chunks may be uneven; the other
// algorithms split evenly).
std::vector<size_t> boundsOf(const std::vector<size_t>& counts) {
  std::vector<size_t> bounds(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) bounds[k + 1] = bounds[k] + counts[k];
  return bounds;
}

void hostAllGatherV(hetcclComm* c, const void* send, void* recv, const std::vector<size_t>& counts,
                    hetcclDataType_t dt) {
  size_t es = dtypeSize(dt);
  std::vector<size_t> bounds = boundsOf(counts);
  char* dst = static_cast<char*>(recv);
  if (send != dst + bounds[c->rank] * es) memmove(dst + bounds[c->rank] * es, send, counts[c->rank] * es);
  ringAllGatherV(c, allMembers(c), dst, bounds.data(), es);
}

void hostReduceScatterV(hetcclComm* c, const void* send, void* recv, const std::vector<size_t>& counts,
                        hetcclDataType_t dt, hetcclRedOp_t op) {
  size_t es = dtypeSize(dt);
  std::vector<size_t> bounds = boundsOf(counts);
  size_t total = bounds.back();
  char* work = c->scratchBuf(1, total * es + 1);
  memcpy(work, send, total * es);
  ringReduceScatterV(c, allMembers(c), work, bounds.data(), elemOf(dt, op));
  memmove(recv, work + bounds[c->rank] * es, counts[c->rank] * es);
  if (op == hetcclAvg) finalizeAvg(recv, counts[c->rank], dt, c->nranks);
}

void hostBroadcast(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt, int root) {
  size_t bytes = count * dtypeSize(dt);
  if (c->rank == root && send != recv) memmove(recv, send, bytes);
  char* buf = static_cast<char*>(recv);
  Members m = allMembers(c);
  hetcclAlgo_t a = c->algo;
  if (a == hetcclAlgoAuto) a = bytes >= (1u << 20) && c->nranks > 2 ? hetcclAlgoRing : hetcclAlgoTree;
  if (a == hetcclAlgoRing) {
    chainBroadcast(c, m, buf, bytes, root);
  } else if (a == hetcclAlgoParameterServer) {
    std::vector<P2POp> ops;
    if (c->rank == root) {
      for (int r = 0; r < c->nranks; ++r)
        if (r != root) ops.push_back(P2POp::sendTo(r, buf, bytes));
    } else {
      ops.push_back(P2POp::recvFrom(root, buf, bytes));
    }
    c->fabric.run(ops);
  } else {
    treeBroadcast(c, m, buf, bytes, root); // tree, halving_doubling, hierarchical
  }
}

void hostReduce(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op,
                int root) {
  size_t es = dtypeSize(dt), bytes = count * es;
  char* work = c->rank == root ? static_cast<char*>(recv) : c->scratchBuf(1, bytes + 1);
  if (send != work) memmove(work, send, bytes);
  Members m = allMembers(c);
  Elem e = elemOf(dt, op);
  hetcclAlgo_t a = c->algo;
  if (a == hetcclAlgoRing) {
    ringReduceScatter(c, m, work, count, e);
    std::vector<P2POp> ops;
    int p = c->nranks;
    if (c->rank == root) {
      for (int r = 0; r < p; ++r)
        if (r != root) {
          size_t b = chunkBegin(count, r, p), n = chunkBegin(count, r + 1, p) - b;
          ops.push_back(P2POp::recvFrom(r, work + b * es, n * es));
        }
    } else {
      size_t b = chunkBegin(count, c->rank, p), n = chunkBegin(count, c->rank + 1, p) - b;
      ops.push_back(P2POp::sendTo(root, work + b * es, n * es));
    }
    c->fabric.run(ops);
  } else if (a == hetcclAlgoParameterServer) {
    // Direct: every rank sends to the root, which adds them in rank order.
    if (c->rank == root) {
      for (int r = 0; r < c->nranks; ++r)
        if (r != root) c->fabric.run({P2POp::recvReduce(r, work, bytes, e.fn, es)});
    } else {
      c->fabric.run({P2POp::sendTo(root, work, bytes)});
    }
  } else {
    treeReduce(c, m, work, count, e, root);
  }
  if (op == hetcclAvg && c->rank == root) finalizeAvg(recv, count, dt, c->nranks);
}

void hostAllToAll(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt) {
  size_t block = count * dtypeSize(dt);
  const char* src = static_cast<const char*>(send);
  char* dst = static_cast<char*>(recv);
  if (send == recv) { // in place: keep a copy of what we send
    char* tmp = c->scratchBuf(1, block * size_t(c->nranks) + 1);
    memcpy(tmp, send, block * size_t(c->nranks));
    src = tmp;
  }
  memmove(dst + size_t(c->rank) * block, src + size_t(c->rank) * block, block);
  std::vector<P2POp> ops;
  for (int r = 0; r < c->nranks; ++r) {
    if (r == c->rank) continue;
    ops.push_back(P2POp::sendTo(r, src + size_t(r) * block, block));
    ops.push_back(P2POp::recvFrom(r, dst + size_t(r) * block, block));
  }
  c->fabric.run(ops);
}

// Uneven blocks (Algorithms/AllToAllV.cpp), counts and offsets in elements.
void hostAllToAllV(hetcclComm* c, const void* send, const std::vector<size_t>& sendCounts,
                   const std::vector<size_t>& sendOffsets, void* recv, const std::vector<size_t>& recvCounts,
                   const std::vector<size_t>& recvOffsets, hetcclDataType_t dt) {
  size_t es = dtypeSize(dt);
  auto bytes = [es](std::vector<size_t> v) {
    for (size_t& x : v) x *= es;
    return v;
  };
  allToAllV(c, static_cast<const char*>(send), bytes(sendCounts), bytes(sendOffsets), static_cast<char*>(recv),
            bytes(recvCounts), bytes(recvOffsets));
}

} // namespace hetccl
