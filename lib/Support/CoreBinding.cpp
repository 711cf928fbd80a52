//===- CoreBinding.cpp - which CPUs a rank on a shared host runs on ------===//
#include "het/Support/CoreBinding.h"

#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace het::support {

std::vector<int> coresOfRank(const std::vector<int> &allowed, int index, int count) {
  const int n = int(allowed.size());
  if (n == 0 || count <= 0 || index < 0 || index >= count)
    return {};
  if (count >= n)
    return {allowed[size_t(index % n)]};
  const int each = n / count;
  return std::vector<int>(allowed.begin() + index * each, allowed.begin() + (index + 1) * each);
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

std::string bindProcess(const std::vector<int> &cpus) {
  if (cpus.empty())
    return "no CPU to bind to";
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE)
      return "CPU " + std::to_string(c) + " is out of range";
    CPU_SET(c, &set);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    return std::string("sched_setaffinity: ") + std::strerror(errno);
  return "";
}

std::string formatCpuList(const std::vector<int> &cpus) {
  std::string text;
  for (int c : cpus)
    text += (text.empty() ? "" : ",") + std::to_string(c);
  return text;
}

std::vector<int> parseCpuList(const std::string &text) {
  std::vector<int> cpus;
  const char *p = text.c_str();
  while (*p) {
    char *end = nullptr;
    errno = 0;
    long c = std::strtol(p, &end, 10);
    if (end == p || errno || c < 0 || c >= CPU_SETSIZE || (!cpus.empty() && c <= cpus.back()))
      return {};
    cpus.push_back(int(c));
    p = end;
    if (*p == ',')
      ++p;
    else if (*p)
      return {};
  }
  return cpus;
}

} // namespace het::support
