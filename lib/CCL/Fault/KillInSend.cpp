//===- KillInSend.cpp - SIGKILL this process mid-message ------------------===//
//
// One process-wide flag, armed by a test program. Unarmed (the normal case)
// it costs one relaxed atomic load per write.
//
//===----------------------------------------------------------------------===//
#include "Fault/KillInSend.h"

#include "het-c/hetccl_fault.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>

namespace hetccl::fault {

namespace {
std::atomic<bool> armed{false};

size_t half(size_t total) { return std::max<size_t>(1, total / 2); }
} // namespace

size_t allowedWrite(size_t want, size_t sent, size_t total) {
  if (!armed.load(std::memory_order_relaxed) || sent >= half(total))
    return want;
  return std::min(want, half(total) - sent);
}

void wrotePayload(size_t sent, size_t total, int peer) {
  if (!armed.load(std::memory_order_relaxed) || sent < half(total))
    return;
  std::fprintf(stderr,
               "hetccl: fault injection: SIGKILL after sending %zu of %zu bytes of a message "
               "to communicator rank %d\n",
               sent, total, peer);
  std::fflush(stderr);
  std::fflush(stdout);
  std::raise(SIGKILL);
}

} // namespace hetccl::fault

extern "C" hetcclResult_t hetcclFaultKillInNextSend(int armed) {
  hetccl::fault::armed.store(armed != 0, std::memory_order_relaxed);
  return hetcclSuccess;
}
