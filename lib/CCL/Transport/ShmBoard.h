// The board: a region of each rank's shm segment where the one-shot and
// two-shot all-reduces (Algorithms/OneShot.cpp, TwoShot.cpp) publish the
// rank's input for its local peers to read in place. Two slots, used by
// alternate calls (a two-shot all-reduce is one call per board-sized
// chunk), so a rank may publish call k+1 while a slow peer still reads
// call k.
//
//   control line per slot: seq (the call whose input the slot holds, 0 none),
//                          the byte counts of the call and of the whole
//                          collective, written before seq, and reduced
//                          (two-shot: the call whose reduced share of the
//                          chunk the slot holds in that share's place)
//   one "done" line:       the last call this rank has finished reading
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
// Where `auto` runs the board algorithms, measured with hetccl-compare on a
// 2-core host (docs/hetccl.md, "The two-shot all-reduce"). With three or
// more ranks: one-shot up to 128 KiB, two-shot above. With two, two-shot
// (each rank reduces half) beats one-shot at every size, but the ring's two
// simultaneous half-buffer exchanges, pipelined through the shm rings, win
// from 64 KiB to 256 KiB: two-shot up to 16 KiB and from 1 MiB.
// HETCCL_ONESHOT_BYTES sets one one-shot limit for all.
constexpr int64_t kDefaultOneShotBytes = 128 << 10;
constexpr int64_t kDefaultOneShotBytesTwoRanks = 0;
constexpr int64_t kTwoShotTwoRanksUpTo = 16 << 10;
constexpr int64_t kTwoShotTwoRanksFrom = 1 << 20;
// A board slot, and so a two-shot chunk: 1 MiB was the fastest of 512 KiB
// to 4 MiB at 256 KiB-64 MiB with 4 ranks on 2 cores (docs/hetccl.md, "The
// two-shot all-reduce"). HETCCL_BOARD_BYTES sets it (0: no board).
constexpr int64_t kDefaultBoardBytes = 1 << 20;

struct alignas(kLine) BoardSlot {
  std::atomic<uint64_t> seq;
  uint64_t bytes;
  uint64_t totalBytes;
  std::atomic<uint64_t> reduced;
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
    s.totalBytes = 0;
    s.reduced.store(0, std::memory_order_relaxed);
  }
  b->done.store(0, std::memory_order_release);
}

} // namespace hetccl
