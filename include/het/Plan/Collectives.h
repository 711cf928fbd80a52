//===- Collectives.h - alpha-beta costs of communication --------*- C++ -*-===//
#ifndef HET_PLAN_COLLECTIVES_H
#define HET_PLAN_COLLECTIVES_H

#include "het/Plan/ClusterSpec.h"

#include <string>

namespace het::plan {

enum class AllReduceAlgorithm { Ring, Tree, Hierarchical };
const char *toString(AllReduceAlgorithm algorithm);
bool parseAllReduceAlgorithm(const std::string &text, AllReduceAlgorithm &out);

/// Point to point: alpha + n / beta.
double p2pTime(double bytes, const Link &link);

/// Ring all-reduce over p members through `link`:
/// 2 (p-1) alpha + 2 (p-1)/p * n / beta.
double ringAllReduceTime(double bytes, int p, const Link &link);
/// Binary-tree reduce then broadcast: 2 ceil(log2 p) (alpha + n / beta).
double treeAllReduceTime(double bytes, int p, const Link &link);
/// Reduce-scatter inside each node (`perNode` members, ring on `intra`),
/// all-reduce of the 1/perNode shard across the `p / perNode` nodes (ring on
/// `inter`), all-gather inside each node.
double hierarchicalAllReduceTime(double bytes, int p, int perNode,
                                 const Link &intra, const Link &inter);

/// Gradient all-reduce of `bytes` over `p` members spread `perNode` to a
/// node: a single node uses `intra` only; otherwise ring and tree run at the
/// slower `inter` link.
double allReduceTime(AllReduceAlgorithm algorithm, double bytes, int p,
                     int perNode, const Link &intra, const Link &inter);

} // namespace het::plan

#endif
