// Two-shot all-reduce among ranks of one host: a reduce-scatter and an
// all-gather through the peers' shm boards (Transport/ShmBoard.h), one
// board-sized chunk at a time. For each chunk every rank
//   1. copies its input into its board and publishes it;
//   2. reduces its share of the chunk (1/p of it, cache-line aligned) from
//      every rank's board, in rank order, into its output, and puts the
//      result in its own board in that share's place (only it reads there);
//   3. copies every peer's reduced share from the peer's board.
// Two synchronisation points per chunk whatever the rank count, where the
// ring waits on 2(p-1) message hops and halving-doubling on 2 log2(p): with
// more ranks than cores each hop waits for its peer to be scheduled. It
// moves what the ring moves -- each rank reads the buffer once to reduce
// and (p-1)/p of it to gather -- without message headers or the transport's
// staging copies. Every rank reduces its share in rank order, so results
// are the same bits on every rank and from run to run.
#include "Algorithms/Algorithms.h"

#include "Algorithms/BoardCall.h"
#include "Transport/ShmBoard.h"

#include <algorithm>
#include <cstring>

namespace hetccl {

bool twoShotApplies(const hetcclComm* c) {
  // The board exists only when every rank is on this host (Comm.cpp).
  return c->boardBytes >= uint64_t(c->nranks) * kLine && c->nranks > 1;
}

bool twoShotWins(const hetcclComm* c, size_t bytes) {
  if (!twoShotApplies(c) || bytes == 0) return false;
  if (c->nranks > 2) return true;
  return bytes <= uint64_t(kTwoShotTwoRanksUpTo) || bytes >= uint64_t(kTwoShotTwoRanksFrom);
}

namespace {

// Share q of a chunk of `count` elements, in elements: the chunk split into
// p parts at cache-line boundaries, so that no two ranks write one line.
struct Share {
  size_t begin, count;
};
Share shareOf(size_t count, size_t elemSize, int q, int p) {
  const size_t perLine = kLine / elemSize; // element sizes divide the line
  const size_t lines = (count + perLine - 1) / perLine;
  size_t b = std::min(count, chunkBegin(lines, q, p) * perLine);
  size_t e = std::min(count, chunkBegin(lines, q + 1, p) * perLine);
  return {b, e - b};
}

// One board-sized chunk: `send`/`recv` point at the chunk, `count` elements.
void twoShotChunk(hetcclComm* c, const char* send, char* recv, size_t count, uint64_t totalBytes, const Elem& e) {
  const size_t bytes = count * e.size;
  const int p = c->nranks, me = c->rank;
  BoardCall call(c, "two-shot all-reduce");
  char* myData = call.data(me);

  // 1. Publish this rank's input. Only the peers read it, and only their
  //    shares of it; this rank reads its own share from `send` -- unless
  //    `send` is `recv` and the sum starts with another rank's share (which
  //    overwrites it).
  const Share own = shareOf(count, e.size, me, p);
  const size_t ownOffset = own.begin * e.size, ownBytes = own.count * e.size;
  const bool ownFromSend = send != recv || me == 0;
  if (ownFromSend) {
    memcpy(myData, send, ownOffset);
    memcpy(myData + ownOffset + ownBytes, send + ownOffset + ownBytes, bytes - ownOffset - ownBytes);
  } else {
    memcpy(myData, send, bytes);
  }
  call.publish(bytes, totalBytes);

  // 2. Reduce this rank's share in rank order: ((x0 op x1) op x2) ...
  for (int r = 0; r < p; ++r) {
    const char* board = call.input(r, bytes, totalBytes);
    if (ownBytes == 0) continue;
    const char* in = r == me && ownFromSend ? send + ownOffset : board + ownOffset;
    if (r == 0) {
      if (in != recv + ownOffset) memcpy(recv + ownOffset, in, ownBytes);
    } else {
      e.fn(recv + ownOffset, in, own.count);
    }
  }
  // Only this rank reads its share of its own board: the reduced share
  // replaces its input there.
  if (ownBytes) memcpy(myData + ownOffset, recv + ownOffset, ownBytes);
  call.control(me)->slot[call.slot()].reduced.store(call.number(), std::memory_order_release);

  // 3. Gather the peers' reduced shares.
  for (int i = 1; i < p; ++i) {
    const int r = (me + i) % p; // start with the next rank: peers do not all read one board at once
    const Share theirs = shareOf(count, e.size, r, p);
    BoardSlot& s = call.control(r)->slot[call.slot()];
    waitOnBoard(
        c, r, [&] { return s.reduced.load(std::memory_order_acquire) == call.number(); }, "its reduced share",
        "two-shot all-reduce");
    if (theirs.count) memcpy(recv + theirs.begin * e.size, call.data(r) + theirs.begin * e.size, theirs.count * e.size);
  }
  call.finish();
}

} // namespace

void twoShotAllReduce(hetcclComm* c, const char* send, char* recv, size_t count, const Elem& e) {
  // Chunks of whole cache lines that the board holds.
  const size_t chunkCount = c->boardBytes / kLine * kLine / e.size;
  const uint64_t totalBytes = uint64_t(count) * e.size;
  for (size_t at = 0; at < count; at += chunkCount) {
    size_t n = std::min(chunkCount, count - at);
    twoShotChunk(c, send + at * e.size, recv + at * e.size, n, totalBytes, e);
  }
}

} // namespace hetccl
