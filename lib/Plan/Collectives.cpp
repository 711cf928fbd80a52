//===- Collectives.cpp - alpha-beta cost formulas
//--------------------------===//
//
// The textbook alpha-beta forms (Thakur, Rabenseifner and Gropp 2005): alpha
// is the link latency, beta its bandwidth per device, n the message bytes.
//
//===----------------------------------------------------------------------===//
#include "het/Plan/Collectives.h"

#include <algorithm>
#include <cmath>

namespace het::plan {

const char *toString(AllReduceAlgorithm a) {
  switch (a) {
  case AllReduceAlgorithm::Ring:
    return "ring";
  case AllReduceAlgorithm::Tree:
    return "tree";
  case AllReduceAlgorithm::Hierarchical:
    return "hierarchical";
  }
  return "ring";
}

bool parseAllReduceAlgorithm(const std::string &text, AllReduceAlgorithm &out) {
  for (auto a : {AllReduceAlgorithm::Ring, AllReduceAlgorithm::Tree,
                 AllReduceAlgorithm::Hierarchical})
    if (text == toString(a)) {
      out = a;
      return true;
    }
  return false;
}

double p2pTime(double bytes, const Link &link) {
  if (bytes <= 0)
    return 0;
  return link.latencySeconds() + bytes / link.bytesPerSecond();
}

double ringAllReduceTime(double bytes, int p, const Link &link) {
  if (p <= 1 || bytes <= 0)
    return 0;
  return 2.0 * (p - 1) * link.latencySeconds() +
         2.0 * (p - 1) / p * bytes / link.bytesPerSecond();
}

double treeAllReduceTime(double bytes, int p, const Link &link) {
  if (p <= 1 || bytes <= 0)
    return 0;
  double depth = std::ceil(std::log2(double(p)));
  return 2.0 * depth * (link.latencySeconds() + bytes / link.bytesPerSecond());
}

double hierarchicalAllReduceTime(double bytes, int p, int perNode,
                                 const Link &intra, const Link &inter) {
  if (p <= 1 || bytes <= 0)
    return 0;
  int q = std::max(1, std::min(perNode, p));
  int nodes = (p + q - 1) / q;
  if (nodes == 1)
    return ringAllReduceTime(bytes, q, intra);
  // Reduce-scatter and all-gather inside the node move (q-1)/q of the data
  // each; the q shards then cross nodes in q parallel rings, which share
  // the node's network connection (`inter` is what one node's NIC carries).
  double inside = (q - 1) * intra.latencySeconds() +
                  double(q - 1) / q * bytes / intra.bytesPerSecond();
  Link shared = inter;
  shared.bandwidthGbps /= q;
  return 2 * inside + ringAllReduceTime(bytes / q, nodes, shared);
}

double allReduceTime(AllReduceAlgorithm algorithm, double bytes, int p,
                     int perNode, const Link &intra, const Link &inter) {
  bool oneNode = p <= perNode;
  const Link &slowest = oneNode ? intra : inter;
  switch (algorithm) {
  case AllReduceAlgorithm::Ring:
    return ringAllReduceTime(bytes, p, slowest);
  case AllReduceAlgorithm::Tree:
    return treeAllReduceTime(bytes, p, slowest);
  case AllReduceAlgorithm::Hierarchical:
    return hierarchicalAllReduceTime(bytes, p, perNode, intra, inter);
  }
  return 0;
}

} // namespace het::plan
