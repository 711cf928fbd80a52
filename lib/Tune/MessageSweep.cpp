//===- MessageSweep.cpp - the latency of a message to a waiting rank ------===//

#include "het/Tune/MessageSweep.h"

#include "ForkedRanks.h"

#include "het-c/hetccl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace het::tune {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(hetcclResult_t result, hetcclComm_t comm, const char *what) {
  if (result != hetcclSuccess)
    throw std::runtime_error(std::string(what) + ": " + hetcclGetErrorString(result) + " (" +
                             hetcclGetLastError(comm) + ")");
}

/// Work the optimizer cannot remove, for `seconds`.
void compute(double seconds) {
  volatile double x = 1;
  double end = now() + seconds;
  while (now() < end)
    for (int k = 0; k < 1000; ++k)
      x = x * 1.0000001 + 1e-9;
}

/// One rank's part; rank 0 returns the latencies, one line per size.
std::string runRank(const MessageSweepOptions &o, const hetcclUniqueId &id, int rank) {
  hetcclConfig_t config = HETCCL_CONFIG_INITIALIZER;
  config.timeoutMs = o.timeoutMs;
  hetcclComm_t comm = nullptr;
  check(hetcclCommInitRank(&comm, o.ranks, id, rank, &config), nullptr, "init");
  const int pairs = o.ranks / 2;
  const int peer = rank < 2 * pairs ? rank ^ 1 : -1;
  std::ostringstream out;
  for (uint64_t bytes : o.sizes) {
    std::vector<unsigned char> buffer(std::max<uint64_t>(bytes, sizeof(double)));
    std::vector<double> latencies;
    check(hetcclBarrier(comm), comm, "barrier");
    // Two warm-up exchanges, then `messages` each way.
    for (int k = 0; k < 2 * (o.messages + 2); ++k) {
      bool sending = (k % 2 == 0) == (rank % 2 == 0);
      if (peer < 0) {
        compute(std::max(o.computeSeconds, 1e-4)); // the odd rank out loads the host
        continue;
      }
      if (sending) {
        if (o.computeSeconds > 0)
          compute(o.computeSeconds);
        double t = now();
        std::memcpy(buffer.data(), &t, sizeof t);
        check(hetcclSend(buffer.data(), buffer.size(), hetcclUint8, peer, comm), comm, "send");
      } else {
        check(hetcclRecv(buffer.data(), buffer.size(), hetcclUint8, peer, comm), comm, "recv");
        double sent;
        std::memcpy(&sent, buffer.data(), sizeof sent);
        if (k >= 4)
          latencies.push_back(now() - sent);
      }
    }
    // Every receiver's mean over its fastest 90 % of calls (the slowest
    // tenth are messages whose receiver the host's scheduler had put aside
    // for a whole slice; with them the means of one sweep and the next
    // differed by up to 3x on a 2-core VM, while a median flips between
    // the two modes of back-to-back messages: peer running or not),
    // averaged over the ranks that received.
    double kept = 0;
    size_t keep = latencies.size() - latencies.size() / 10;
    std::sort(latencies.begin(), latencies.end());
    for (size_t i = 0; i < keep; ++i)
      kept += latencies[i];
    const double trimmedMean = keep > 0 ? kept / double(keep) : 0;
    double mine[2] = {trimmedMean, keep > 0 ? 1.0 : 0.0}, all[2] = {0, 0};
    check(hetcclAllReduce(mine, all, 2, hetcclFloat64, hetcclSum, comm), comm, "all-reduce");
    if (rank == 0)
      out << bytes << " " << (all[1] > 0 ? all[0] / all[1] : 0) << "\n";
  }
  hetcclCommDestroy(comm);
  return out.str();
}

} // namespace

std::vector<double> sweepMessages(const MessageSweepOptions &o) {
  if (o.ranks < 2)
    throw std::runtime_error("a message sweep needs at least 2 ranks");
  std::string text = runForkedRanks(o.ranks, "message sweep",
                                    [&](const hetcclUniqueId &id, int rank) {
                                      return runRank(o, id, rank);
                                    });
  std::vector<double> latencies;
  std::istringstream in(text);
  uint64_t bytes;
  double seconds;
  while (in >> bytes >> seconds)
    latencies.push_back(seconds);
  if (latencies.size() != o.sizes.size())
    throw std::runtime_error("internal error: the message sweep reported " +
                             std::to_string(latencies.size()) + " sizes of " +
                             std::to_string(o.sizes.size()));
  return latencies;
}

} // namespace het::tune
