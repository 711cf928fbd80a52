// The small-message board: a region of each rank's shm segment where the
// one-shot all-reduce (Algorithms/OneShot.cpp) publishes the rank's input
// for its local peers to read in place. Two slots, used by alternate calls,
// so a rank may publish call k+1 while a slow peer still reads call k.
//
//   control line per slot: seq (the call whose data the slot holds, 0 none)
//                          and the byte count, written before seq
//   one "done" line:       the last call whose inputs this rank has read
//   data per slot:         boardBytes, cache-line aligned
//
// A rank overwrites slot k%2 for call k only after every peer's done >= k-2.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace hetccl {

constexpr size_t kLine = 64;
// The largest all-reduce `auto` runs one-shot, measured on a 2-core host
// (docs/hetccl.md, "Small messages"): with two ranks the ring's two
// simultaneous half-buffer exchanges win from 32 KiB; with three or more,
// one-shot wins up to 128 KiB. HETCCL_ONESHOT_BYTES sets one limit for all
// (and the board's size, which is the larger default).
constexpr int64_t kDefaultOneShotBytes = 128 << 10;
constexpr int64_t kDefaultOneShotBytesTwoRanks = 16 << 10;

struct alignas(kLine) BoardSlot {
  std::atomic<uint64_t> seq;
  uint64_t bytes;
};

struct BoardControl {
  BoardSlot slot[2];
  alignas(kLine) std::atomic<uint64_t> done;
};

inline size_t boardControlBytes() { return (sizeof(BoardControl) + kLine - 1) / kLine * kLine; }
// The board's size in a segment for `boardBytes` per slot (0: no board).
inline size_t boardSize(uint64_t boardBytes) {
  return boardBytes ? boardControlBytes() + 2 * ((boardBytes + kLine - 1) / kLine * kLine) : 0;
}
inline BoardControl* boardControl(char* board) { return reinterpret_cast<BoardControl*>(board); }
inline char* boardData(char* board, uint64_t boardBytes, int slot) {
  return board + boardControlBytes() + size_t(slot) * ((boardBytes + kLine - 1) / kLine * kLine);
}
inline void initBoard(char* board) {
  BoardControl* b = new (board) BoardControl;
  for (auto& s : b->slot) {
    s.seq.store(0, std::memory_order_relaxed);
    s.bytes = 0;
  }
  b->done.store(0, std::memory_order_release);
}

} // namespace hetccl
