// Recursive halving-doubling (Rabenseifner): a reduce-scatter by recursive
// halving then an all-gather by recursive doubling; 2 log2(p) steps and the
// ring's bandwidth. A non-power-of-two count of members first folds the
// extra members into their neighbours (they send their data in and get the
// result back at the end).
#include "Algorithms/Algorithms.h"

#include "Common/Error.h"

namespace hetccl {

void hdAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  int p = m.size(), me = m.me;
  if (p == 1) return;
  int pof2 = 1;
  while (pof2 * 2 <= p) pof2 *= 2;
  int rem = p - pof2;
  size_t bytes = count * e.size;
  int newrank;
  if (me < 2 * rem) {
    if (me % 2 == 0) {
      c->fabric.run({P2POp::sendTo(m.ranks[me + 1], buf, bytes)});
      newrank = -1;
    } else {
      c->fabric.run({P2POp::recvReduce(m.ranks[me - 1], buf, bytes, e.fn, e.size)});
      newrank = me / 2;
    }
  } else {
    newrank = me - rem;
  }
  if (newrank >= 0) {
    auto real = [&](int nr) { return m.ranks[nr < rem ? nr * 2 + 1 : nr + rem]; };
    struct Step {
      int partner;
      size_t lo, hi;
    };
    std::vector<Step> steps;
    size_t lo = 0, hi = count;
    for (int dist = pof2 / 2; dist >= 1; dist /= 2) {
      int partner = real(newrank ^ dist);
      size_t mid = lo + (hi - lo) / 2;
      bool lower = (newrank & dist) == 0;
      size_t klo = lower ? lo : mid, khi = lower ? mid : hi; // kept half
      size_t slo = lower ? mid : lo, shi = lower ? hi : mid; // sent half
      steps.push_back({partner, lo, hi});
      c->fabric.run({P2POp::sendTo(partner, buf + slo * e.size, (shi - slo) * e.size),
                     P2POp::recvReduce(partner, buf + klo * e.size, (khi - klo) * e.size, e.fn, e.size)});
      lo = klo;
      hi = khi;
    }
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      // The partner holds the other half of [it->lo, it->hi).
      size_t plo = lo == it->lo ? hi : it->lo;
      size_t phi = lo == it->lo ? it->hi : lo;
      c->fabric.run({P2POp::sendTo(it->partner, buf + lo * e.size, (hi - lo) * e.size),
                     P2POp::recvFrom(it->partner, buf + plo * e.size, (phi - plo) * e.size)});
      lo = it->lo;
      hi = it->hi;
    }
  }
  if (me < 2 * rem) {
    if (me % 2 == 1)
      c->fabric.run({P2POp::sendTo(m.ranks[me - 1], buf, bytes)});
    else
      c->fabric.run({P2POp::recvFrom(m.ranks[me + 1], buf, bytes)});
  }
}

static bool pow2(int p) { return p > 0 && (p & (p - 1)) == 0; }

void hdReduceScatter(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e) {
  int p = m.size(), me = m.me;
  if (!pow2(p)) fail(hetcclInternalError, "halving reduce-scatter needs a power-of-two member count");
  int blo = 0, bhi = p;
  for (int dist = p / 2; dist >= 1; dist /= 2) {
    int partner = m.ranks[me ^ dist];
    int mid = blo + (bhi - blo) / 2;
    bool lower = (me & dist) == 0;
    int klo = lower ? blo : mid, khi = lower ? mid : bhi;
    int slo = lower ? mid : blo, shi = lower ? bhi : mid;
    size_t kb = chunkBegin(count, klo, p), ke = chunkBegin(count, khi, p);
    size_t sb = chunkBegin(count, slo, p), se = chunkBegin(count, shi, p);
    c->fabric.run({P2POp::sendTo(partner, buf + sb * e.size, (se - sb) * e.size),
                   P2POp::recvReduce(partner, buf + kb * e.size, (ke - kb) * e.size, e.fn, e.size)});
    blo = klo;
    bhi = khi;
  }
}

void hdAllGather(hetcclComm* c, const Members& m, char* buf, size_t count, size_t es) {
  int p = m.size(), me = m.me;
  if (!pow2(p)) fail(hetcclInternalError, "doubling all-gather needs a power-of-two member count");
  for (int dist = 1; dist < p; dist *= 2) {
    int pm = me ^ dist;
    int mlo = me & ~(dist - 1), plo = pm & ~(dist - 1);
    size_t mb = chunkBegin(count, mlo, p), me_ = chunkBegin(count, mlo + dist, p);
    size_t pb = chunkBegin(count, plo, p), pe = chunkBegin(count, plo + dist, p);
    c->fabric.run({P2POp::sendTo(m.ranks[pm], buf + mb * es, (me_ - mb) * es),
                   P2POp::recvFrom(m.ranks[pm], buf + pb * es, (pe - pb) * es)});
  }
}

} // namespace hetccl
