//===- CommTrace.cpp - what a pipeline rank posts to hetccl ---------------===//
#include "CommTrace.h"

#include "Arguments.h"

#include <cstdlib>

namespace het::rt {

void CommTrace::open(int rank) {
  const char *dir = std::getenv("HETRT_COMM_TRACE");
  if (!dir || !*dir)
    return;
  std::string path = std::string(dir) + "/rank" + std::to_string(rank) + ".trace";
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    die("HETRT_COMM_TRACE: cannot write " + path);
}

void CommTrace::step(long long s) {
  if (file_)
    std::fprintf(file_, "step %lld\n", s);
}

void CommTrace::group(const std::vector<std::pair<int, size_t>> &sends,
                      const std::vector<std::pair<int, size_t>> &receives) {
  if (!file_)
    return;
  std::fputs("group send", file_);
  for (const auto &[peer, bytes] : sends)
    std::fprintf(file_, " %d:%zu", peer, bytes);
  std::fputs(" recv", file_);
  for (const auto &[peer, bytes] : receives)
    std::fprintf(file_, " %d:%zu", peer, bytes);
  std::fputc('\n', file_);
}

void CommTrace::collective(const std::string &what, const std::vector<int> &members,
                           size_t bytes) {
  if (!file_)
    return;
  std::fprintf(file_, "collective %s ", what.c_str());
  for (size_t i = 0; i < members.size(); ++i)
    std::fprintf(file_, "%s%d", i ? "," : "", members[i]);
  std::fprintf(file_, " %zu\n", bytes);
}

CommTrace::~CommTrace() {
  if (file_)
    std::fclose(file_);
}

CommTrace &commTrace() {
  static CommTrace trace;
  return trace;
}

} // namespace het::rt
