//===- CoreBinding.cpp - which cores a local rank runs on -----------------===//
#include "CoreBinding.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hetrun {

std::vector<int> coresOfRank(const std::vector<int> &allowed, int local, int nranks) {
  const int n = int(allowed.size());
  if (n == 0 || nranks <= 0 || local < 0)
    return {};
  if (nranks >= n)
    return {allowed[size_t(local % n)]};
  const int each = n / nranks;
  return std::vector<int>(allowed.begin() + local * each, allowed.begin() + (local + 1) * each);
}

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set))
      cpus.push_back(c);
  return cpus;
}

std::string bindRank(int local, int nranks) {
  std::vector<int> cores = coresOfRank(allowedCpus(), local, nranks);
  if (cores.empty())
    return "no CPU to bind to";
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores)
    CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return std::string("sched_setaffinity: ") + std::strerror(errno);
  return "";
}

} // namespace hetrun
