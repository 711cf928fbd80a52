// All-to-all with uneven blocks (hetcclAllToAllV). Each pair of ranks
// exchanges one frame per direction, empty blocks too, so a count the two
// sides disagree on is an error at once (Progress.cpp checks each frame's
// length), never a wait.
//
// Between ranks of one host, a block of at least kSingleCopyBytes is not
// copied through the shared-memory ring (a copy in, a copy out): its frame
// is a 24-byte descriptor (sender's pid, address, bytes) and the receiver
// reads the block straight from the sender's memory with process_vm_readv
// (Linux cross-memory attach, one copy, as Open MPI's vader does), then
// answers with a token; the sender returns once every such receiver has
// read. Where the kernel refuses the read (a container's seccomp profile,
// ptrace restrictions, or HETCCL_SINGLE_COPY=0), the token asks for the
// bytes and they come as an ordinary frame. Both sides decide per pair
// from their own count, so they agree whenever the counts do.
//
// When every rank is on this host and each rank's blocks fit its board
// (Transport/ShmBoard.h) below kBoardLimit, one board call replaces the
// pairwise frames: each rank writes a table of its blocks (offset, bytes
// per destination) and the blocks to its board, and every rank copies its
// block out of each peer's board; one synchronisation instead of a frame
// per pair, which is what small exchanges cost. Whether a rank's blocks
// fit is its own business, so each says so on the board and all of them
// fall back to the frames if one does not.
#include "Algorithms/Algorithms.h"
#include "Algorithms/BoardCall.h"

#include "Common/Error.h"
#include "Transport/Progress.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/uio.h>
#include <unistd.h>

namespace hetccl {

namespace {

constexpr size_t kSingleCopyBytes = 16 << 10;
constexpr size_t kBoardLimit = 1 << 20;

// The board path; false (after one board call every rank makes) when some
// rank's blocks do not fit.
bool boardAllToAllV(hetcclComm* c, const char* send, const std::vector<size_t>& sendBytes,
                    const std::vector<size_t>& sendOffsets, char* recv, const std::vector<size_t>& recvBytes,
                    const std::vector<size_t>& recvOffsets) {
  const int n = c->nranks, me = c->rank;
  const size_t table = 2 * sizeof(uint64_t) * size_t(n);
  size_t total = table;
  for (int r = 0; r < n; ++r) total += sendBytes[r];
  bool fits = total <= std::min<size_t>(c->boardBytes, kBoardLimit + table);
  BoardCall call(c, "board all-to-all-v");
  char* board = call.data(me);
  if (fits) {
    auto* entries = reinterpret_cast<uint64_t*>(board);
    size_t at = table;
    for (int r = 0; r < n; ++r) {
      entries[2 * r] = at;
      entries[2 * r + 1] = sendBytes[r];
      if (r != me) memcpy(board + at, send + sendOffsets[r], sendBytes[r]);
      at += r == me ? 0 : sendBytes[r];
    }
  }
  // bytes: what this rank wrote; totalBytes: 1 where its blocks fit.
  call.publish(fits ? total : 0, fits ? 1 : 0);
  bool everyone = fits;
  for (int r = 0; r < n && everyone; ++r)
    if (r != me) everyone = call.peerInput(r).totalBytes == 1;
  if (everyone) {
    memmove(recv + recvOffsets[me], send + sendOffsets[me], sendBytes[me]);
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      const char* theirs = call.data(r);
      const auto* entries = reinterpret_cast<const uint64_t*>(theirs);
      if (entries[2 * me + 1] != recvBytes[r])
        fail(hetcclInvalidUsage, "rank " + std::to_string(r) + " sent " + std::to_string(entries[2 * me + 1]) +
                                     " bytes where this rank expects " + std::to_string(recvBytes[r]) +
                                     " (mismatched counts across ranks?)");
      memcpy(recv + recvOffsets[r], theirs + entries[2 * me], recvBytes[r]);
    }
  }
  call.finish();
  return everyone;
}

struct Descriptor {
  int64_t pid;
  uint64_t address, bytes;
};

// Reads `bytes` at `address` of process `pid` into `into`; false where the
// kernel refuses (the caller asks for the bytes instead).
bool readFrom(int64_t pid, uint64_t address, char* into, size_t bytes) {
  static const bool allowed = [] {
    const char* v = getenv("HETCCL_SINGLE_COPY");
    return !(v && strcmp(v, "0") == 0);
  }();
  if (!allowed) return false;
  size_t done = 0;
  while (done < bytes) {
    iovec local{into + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
    ssize_t n = process_vm_readv(pid_t(pid), &local, 1, &remote, 1, 0);
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

} // namespace

void allToAllV(hetcclComm* c, const char* send, const std::vector<size_t>& sendBytes,
               const std::vector<size_t>& sendOffsets, char* recv, const std::vector<size_t>& recvBytes,
               const std::vector<size_t>& recvOffsets) {
  const int n = c->nranks, me = c->rank;
  if (c->boardBytes > 0 && n > 1 && boardAllToAllV(c, send, sendBytes, sendOffsets, recv, recvBytes, recvOffsets))
    return;
  memmove(recv + recvOffsets[me], send + sendOffsets[me], sendBytes[me]);
  auto singleCopy = [&](int peer, size_t bytes) {
    return bytes >= kSingleCopyBytes && size_t(peer) < c->segOfRank.size() && c->segOfRank[peer] != nullptr;
  };
  std::vector<Descriptor> mine(n), theirs(n);
  std::vector<P2POp> ops;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    if (singleCopy(r, sendBytes[r])) {
      mine[r] = {int64_t(getpid()), uint64_t(reinterpret_cast<uintptr_t>(send + sendOffsets[r])), sendBytes[r]};
      ops.push_back(P2POp::sendTo(r, &mine[r], sizeof(Descriptor)));
    } else {
      ops.push_back(P2POp::sendTo(r, send + sendOffsets[r], sendBytes[r]));
    }
    if (singleCopy(r, recvBytes[r]))
      ops.push_back(P2POp::recvFrom(r, &theirs[r], sizeof(Descriptor)));
    else
      ops.push_back(P2POp::recvFrom(r, recv + recvOffsets[r], recvBytes[r]));
  }
  try {
    c->fabric.run(ops);
  } catch (const CclError& e) {
    if (e.result() != hetcclInvalidUsage) throw;
    throw CclError(e.result(), std::string(e.what()) +
                                   " (all-to-all-v: a block of at least " + std::to_string(kSingleCopyBytes) +
                                   " bytes between ranks of one host travels as a " +
                                   std::to_string(sizeof(Descriptor)) + "-byte descriptor)");
  }
  // Read what the descriptors point at; tell each sender whether it can
  // reuse its buffer (1) or must send the bytes (0).
  std::vector<uint64_t> tokenOut(n), tokenIn(n);
  ops.clear();
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    if (singleCopy(r, recvBytes[r])) {
      if (theirs[r].bytes != recvBytes[r])
        fail(hetcclInvalidUsage, "rank " + std::to_string(r) + " sends " + std::to_string(theirs[r].bytes) +
                                     " bytes where this rank expects " + std::to_string(recvBytes[r]) +
                                     " (mismatched counts across ranks?)");
      tokenOut[r] = readFrom(theirs[r].pid, theirs[r].address, recv + recvOffsets[r], recvBytes[r]) ? 1 : 0;
      ops.push_back(P2POp::sendTo(r, &tokenOut[r], sizeof(uint64_t)));
    }
    if (singleCopy(r, sendBytes[r])) ops.push_back(P2POp::recvFrom(r, &tokenIn[r], sizeof(uint64_t)));
  }
  if (ops.empty()) return;
  c->fabric.run(ops);
  // Where a read was refused, the bytes come as a frame.
  ops.clear();
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    if (singleCopy(r, recvBytes[r]) && tokenOut[r] == 0)
      ops.push_back(P2POp::recvFrom(r, recv + recvOffsets[r], recvBytes[r]));
    if (singleCopy(r, sendBytes[r]) && tokenIn[r] == 0)
      ops.push_back(P2POp::sendTo(r, send + sendOffsets[r], sendBytes[r]));
  }
  if (!ops.empty()) c->fabric.run(ops);
}

} // namespace hetccl
