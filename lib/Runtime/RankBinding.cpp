//===- RankBinding.cpp - a pipeline rank's CPUs, by its place in the plan ---===//
#include "RankBinding.h"

#include "Arguments.h"

#include "het/Support/CoreBinding.h"

#include <cstdlib>
#include <vector>

namespace het::rt {

int bindingIndex(const PipelineLayout &layout, int rank) {
  const int total = layout.ranks();
  std::vector<bool> working(size_t(total), false);
  int index = 0;
  for (int j = 0; j < layout.stages(); ++j)
    for (int q = 0; q < layout.replicas(j); ++q)
      for (int t = 0; t < layout.tensorParallel(j); ++t) {
        int r = layout.rankOf(j, q, t);
        if (r == rank)
          return index;
        working[size_t(r)] = true;
        ++index;
      }
  for (int r = 0; r < total; ++r) {
    if (working[size_t(r)])
      continue;
    if (r == rank)
      return index;
    ++index;
  }
  return -1;
}

std::string bindByPlace(const PipelineLayout &layout, int rank, int worldSize) {
  const char *list = std::getenv(het::support::bindCpusVariable());
  if (!list || !*list)
    return ""; // not bound by het-run (--bind-to none, or another launcher)
  // Ranks on several hosts: each host's het-run numbered only its own, and
  // its binding stands.
  if (envInteger("LOCAL_WORLD_SIZE", -1) != worldSize)
    return "";
  std::vector<int> cpus = het::support::parseCpuList(list);
  if (cpus.empty())
    return std::string(het::support::bindCpusVariable()) + "='" + list +
           "' is not a list of CPUs; the rank keeps het-run's binding";
  int index = bindingIndex(layout, rank);
  std::string why = het::support::bindProcess(
      het::support::coresOfRank(cpus, index, layout.ranks()));
  return why.empty() ? "" : why + "; the rank keeps het-run's binding";
}

} // namespace het::rt
