// The cost table behind `auto`: an alpha-beta model per link kind (alpha =
// per-message latency, beta = seconds per byte), measured roughly on a
// two-core x86 host (shm) and loopback/veth TCP. For each algorithm the
// model counts latency steps and bytes on the critical path; `auto` takes
// the cheapest. Users override with hetcclCommSetAlgorithm or HETCCL_ALGO.
#include "Algorithms/Algorithms.h"

#include <cmath>

namespace hetccl {

namespace {
struct LinkCost {
  double alpha; // s per message
  double beta;  // s per byte
};
// {shm, tcp}
constexpr LinkCost kCost[2] = {{3e-6, 1.0 / 6e9}, {40e-6, 1.0 / 1.5e9}};
} // namespace

hetcclAlgo_t pickAllReduce(const hetcclComm* c, size_t bytes) {
  int p = c->nranks;
  if (p == 1) return hetcclAlgoRing;
  bool anyTcp = false;
  for (const auto& l : c->fabric.links)
    if (l && l->pollFd() >= 0) anyTcp = true;
  const LinkCost& flat = kCost[anyTcp ? 1 : 0];
  double n = double(bytes);
  double lg = std::ceil(std::log2(double(p)));
  int pof2 = 1;
  while (pof2 * 2 <= p) pof2 *= 2;
  double cost[hetcclNumAlgos];
  for (double& x : cost) x = 1e30;
  cost[hetcclAlgoRing] = 2 * (p - 1) * flat.alpha + 2.0 * (p - 1) / p * n * flat.beta;
  cost[hetcclAlgoTree] = 2 * lg * flat.alpha + 2 * lg * n * flat.beta;
  cost[hetcclAlgoHalvingDoubling] = 2 * std::log2(double(pof2)) * flat.alpha + 2.0 * (pof2 - 1) / pof2 * n * flat.beta +
                                    (pof2 != p ? 2 * (flat.alpha + n * flat.beta) : 0);
  // Incast: p-1 flows into each server share its memory bandwidth.
  cost[hetcclAlgoParameterServer] = 2 * flat.alpha * (p - 1) + 2.0 * (p - 1) / p * n * flat.beta * 1.5;
  int G = int(c->groups.size());
  if (G > 1) {
    int L = int(c->groups[0].size());
    bool uniform = true;
    for (const auto& g : c->groups) uniform &= int(g.size()) == L;
    const LinkCost& in = kCost[0];
    const LinkCost& out = kCost[1];
    if (uniform)
      cost[hetcclAlgoHierarchical] = 2 * (L - 1) * in.alpha + 2.0 * (L - 1) / L * n * in.beta + 2 * (G - 1) * out.alpha +
                                     2.0 * (G - 1) / G * (n / L) * out.beta;
    else
      cost[hetcclAlgoHierarchical] = 4 * lg * in.alpha + 2 * lg * n * in.beta + 2 * (G - 1) * out.alpha +
                                     2.0 * (G - 1) / G * n * out.beta;
  }
  hetcclAlgo_t best = hetcclAlgoRing;
  for (int a = 1; a < hetcclNumAlgos; ++a)
    if (cost[a] < cost[best]) best = hetcclAlgo_t(a);
  return best;
}

} // namespace hetccl
