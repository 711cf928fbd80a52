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
// When every rank is on this host, one board call (Transport/ShmBoard.h)
// replaces the pairwise frames: each rank writes a table of its blocks to
// its board (per destination: where, how many bytes, and whether inline)
// and every rank takes its block from each peer: an inline block (small,
// or every block where single-copy reads are refused) out of the peer's
// board, a large one straight from the peer's memory by process_vm_readv;
// then the rank says it is done and waits until its peers are done with
// its blocks. One synchronisation instead of a frame per pair, which is
// what small exchanges cost. Whether this host's ranks can read each other
// is asked once per communicator (a probe every pair tries, agreed on the
// board). Without single-copy reads the inline blocks must fit the board
// below boardLimit(); each rank says on the board whether its do, and all
// fall back to the frames if one's do not.
#include "Algorithms/Algorithms.h"
#include "Algorithms/BoardCall.h"

#include "Common/Error.h"
#include "Transport/Progress.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/uio.h>
#include <unistd.h>

namespace hetccl {

namespace {

// Below this a block is copied (through the board or a frame: a copy in
// and a copy out beat a system call); from it on, read from the sender.
constexpr size_t kSingleCopyBytes = 16 << 10;
// The most a rank's blocks may add up to for the board path: measured with
// hetccl-bench -C alltoallv on a 2-core host (2026-12-07), the board wins
// up to 16 KiB with two ranks (frames and single-copy reads from 64 KiB)
// and up to 256 KiB with four (1 MiB: the frames), where each frame costs
// a wake-up of a rank sharing a core.
size_t boardLimit(int nranks) { return nranks == 2 ? size_t(32) << 10 : size_t(512) << 10; }

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

// A rank's board in an all-to-all-v call: its pid, then per destination
// where its block is (an offset into the board, or an address in its
// memory), its bytes and whether it is inline; then the inline blocks.
struct BoardEntry {
  uint64_t where, bytes, inlined, unused;
};
int64_t* boardPid(char* board) { return reinterpret_cast<int64_t*>(board); }
BoardEntry* boardEntries(char* board) { return reinterpret_cast<BoardEntry*>(board + 64); }
size_t boardTableBytes(int n) { return 64 + size_t(n) * sizeof(BoardEntry); }

// Every local pair tries a single-copy read of the other once; the answer
// (all could) is agreed on the board, so every rank takes the same path.
bool askSingleCopy(hetcclComm* c) {
  static const uint64_t probe = 0x68657463636c3121ull; // "hetccl1!"
  const int n = c->nranks, me = c->rank;
  std::vector<Descriptor> mine(n), theirs(n);
  std::vector<P2POp> ops;
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    mine[r] = {int64_t(getpid()), uint64_t(reinterpret_cast<uintptr_t>(&probe)), sizeof probe};
    ops.push_back(P2POp::sendTo(r, &mine[r], sizeof(Descriptor)));
    ops.push_back(P2POp::recvFrom(r, &theirs[r], sizeof(Descriptor)));
  }
  c->fabric.run(ops);
  bool readable = true;
  for (int r = 0; r < n && readable; ++r) {
    if (r == me) continue;
    uint64_t got = 0;
    readable = readFrom(theirs[r].pid, theirs[r].address, reinterpret_cast<char*>(&got), sizeof got) &&
               got == probe;
  }
  BoardCall call(c, "all-to-all-v's single-copy probe");
  call.publish(0, readable ? 1 : 0);
  bool everyone = readable;
  for (int r = 0; r < n; ++r)
    if (r != me) everyone = call.peerInput(r).totalBytes == 1 && everyone;
  call.finish();
  return everyone;
}

// The board path; false (after one board call every rank makes) when some
// rank's inline blocks do not fit.
bool boardAllToAllV(hetcclComm* c, const char* send, const std::vector<size_t>& sendBytes,
                    const std::vector<size_t>& sendOffsets, char* recv, const std::vector<size_t>& recvBytes,
                    const std::vector<size_t>& recvOffsets) {
  const int n = c->nranks, me = c->rank;
  if (c->singleCopy == 0) c->singleCopy = askSingleCopy(c) ? 1 : -1;
  const bool reads = c->singleCopy > 0;
  auto inlined = [&](size_t bytes) { return !reads || bytes < kSingleCopyBytes; };
  bool byReference = false; // a peer reads a block of this rank's memory
  const size_t table = boardTableBytes(n);
  size_t total = table;
  for (int r = 0; r < n; ++r)
    if (r != me && inlined(sendBytes[r])) total += sendBytes[r];
  bool fits = total <= c->boardBytes && (reads || total <= boardLimit(n) + table);
  BoardCall call(c, "board all-to-all-v");
  char* board = call.data(me);
  if (fits) {
    *boardPid(board) = getpid();
    size_t at = table;
    for (int r = 0; r < n; ++r) {
      BoardEntry& e = boardEntries(board)[r];
      e.bytes = sendBytes[r];
      e.inlined = r == me || inlined(sendBytes[r]);
      if (r == me) continue;
      if (e.inlined) {
        e.where = at;
        memcpy(board + at, send + sendOffsets[r], sendBytes[r]);
        at += sendBytes[r];
      } else {
        e.where = uint64_t(reinterpret_cast<uintptr_t>(send + sendOffsets[r]));
        byReference = true;
      }
    }
  }
  // bytes: what this rank wrote; totalBytes: 1 where its blocks fit.
  call.publish(fits ? total : 0, fits ? 1 : 0);
  bool everyone = fits;
  for (int r = 0; r < n; ++r)
    if (r != me) everyone = call.peerInput(r).totalBytes == 1 && everyone;
  if (everyone) {
    memmove(recv + recvOffsets[me], send + sendOffsets[me], sendBytes[me]);
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      char* theirs = call.data(r);
      const BoardEntry& e = boardEntries(theirs)[me];
      if (e.bytes != recvBytes[r])
        fail(hetcclInvalidUsage, "rank " + std::to_string(r) + " sent " + std::to_string(e.bytes) +
                                     " bytes where this rank expects " + std::to_string(recvBytes[r]) +
                                     " (mismatched counts across ranks?)");
      if (e.inlined)
        memcpy(recv + recvOffsets[r], theirs + e.where, recvBytes[r]);
      else if (!readFrom(*boardPid(theirs), e.where, recv + recvOffsets[r], recvBytes[r]))
        fail(hetcclSystemError, "reading rank " + std::to_string(r) + "'s block with process_vm_readv failed (" +
                                    std::string(strerror(errno)) +
                                    ") although it worked when the communicator asked; set HETCCL_SINGLE_COPY=0");
    }
  }
  call.finish();
  // Blocks read from this rank's memory: it may not return (and reuse its
  // buffer) before every peer has read them.
  if (everyone && byReference)
    for (int r = 0; r < n; ++r)
      if (r != me) {
        BoardControl* ctl = call.control(r);
        waitOnBoard(
            c, r, [&] { return ctl->done.load(std::memory_order_acquire) >= call.number(); },
            "reading this rank's blocks", "board all-to-all-v");
      }
  return everyone;
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
