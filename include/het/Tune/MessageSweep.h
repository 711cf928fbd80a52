//===- MessageSweep.h - the latency of a message to a waiting rank -*- C++ -*-===//
//
// A pipeline rank receives its activations and gradients after waiting for
// the sender's computation, long enough for hetccl's progress loop to give
// up spinning and sleep; the all-reduces of its update start the same way.
// On a host whose cores the job's ranks share, waking the receiver is most
// of what such a message costs, and a back-to-back collective sweep never
// sees it. So this sweep forks the host's ranks (hetccl over shared
// memory), pairs them up (the odd one out computes, loading the host as a
// job does), and has each sender compute for a while before it sends: the
// receiver's clock at arrival minus the sender's at the send (one steady
// clock on one host; the send time travels in the message) is the
// latency: each receiver's mean over its fastest 90 % of calls (the rest
// are slices the host's scheduler gave someone else), averaged over the
// receivers. With no computation
// (computeSeconds 0) the messages follow each other as a collective's
// steps do, every pair at once: the warm latency under the same load.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TUNE_MESSAGESWEEP_H
#define HET_TUNE_MESSAGESWEEP_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace het::tune {

struct MessageSweepOptions {
  int ranks = 2;                 // processes on this host (>= 2)
  std::vector<uint64_t> sizes;   // message bytes (>= 8)
  int messages = 100;            // timed messages per size and pair direction
  double computeSeconds = 0.001; // the sender's work before each send (0: none)
  int timeoutMs = 60000;
};

/// Latency (seconds) per size, in the order of `sizes`. Throws
/// std::runtime_error naming the rank that failed.
std::vector<double> sweepMessages(const MessageSweepOptions &options);

} // namespace het::tune

#endif
