//===- CommTrace.h - what a pipeline rank posts to hetccl -------*- C++ -*-===//
//
// HETRT_COMM_TRACE=DIR makes every rank of a pipeline write, for each
// training step, the blocking hetccl calls it makes in order, to
// DIR/rank<k>.trace:
//
//   step <s>
//   group send <peer>:<bytes> ... recv <peer>:<bytes> ...
//   collective <what> <rank>,<rank>,... <bytes>
//
// (world ranks throughout; a group's sends and receives are posted together
// and it returns when all are done). test/pipeline/Inputs/check_deadlock.py
// replays the traces of all ranks under eager and rendezvous sends: the
// schedule and posting rule must finish under both, whatever the message
// sizes and the transport's buffering. Off (one branch per call) unless
// the variable is set.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_COMMTRACE_H
#define HET_LIB_RUNTIME_COMMTRACE_H

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace het::rt {

class CommTrace {
public:
  /// Opens DIR/rank<rank>.trace when HETRT_COMM_TRACE=DIR is set.
  void open(int rank);
  bool on() const { return file_ != nullptr; }
  void step(long long s);
  /// (peer, bytes) of each send and receive of one group.
  void group(const std::vector<std::pair<int, size_t>> &sends,
             const std::vector<std::pair<int, size_t>> &receives);
  void collective(const std::string &what, const std::vector<int> &members, size_t bytes);
  ~CommTrace();

private:
  FILE *file_ = nullptr;
};

/// The trace of this process.
CommTrace &commTrace();

} // namespace het::rt

#endif
