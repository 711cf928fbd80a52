// hetcclAllToAllV (MPI_Alltoallv's contract): uneven blocks between every
// pair of ranks, empty ones included, at displacements with gaps and in
// any order, checked bit for bit at 2, 3 and 4 real processes through
// each path (the shared board, single-copy reads, frames where the reads
// are refused, TCP); a count the two sides of a pair disagree on fails
// the receiving rank naming the bytes, even when one side says 0; bad
// arguments fail with a message and leave the communicator usable; a
// SIGKILLed peer becomes an error on the others within 2x the timeout.
#include "Exact.h"
#include "Harness.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

using namespace hetccltest;

namespace {

/// Elements rank `from` sends rank `to` (0 for some pairs, never for all).
size_t countOf(int from, int to, size_t base) {
  return (from + 2 * to) % 3 == 1 ? 0 : base + size_t(from) + 2 * size_t(to);
}
int64_t valueOf(int from, int to, size_t i) { return int64_t((from * 37 + to * 11 + i) % 100); }

/// Blocks laid out in reverse rank order with a one-element gap after
/// each (send side), in rank order with a gap of two (receive side).
std::vector<size_t> reverseOffsets(const std::vector<size_t>& counts) {
  std::vector<size_t> at(counts.size());
  size_t next = 0;
  for (size_t k = counts.size(); k-- > 0;) {
    at[k] = next;
    next += counts[k] + 1;
  }
  return at;
}
std::vector<size_t> forwardOffsets(const std::vector<size_t>& counts) {
  std::vector<size_t> at(counts.size());
  size_t next = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    at[k] = next;
    next += counts[k] + 2;
  }
  return at;
}
size_t span(const std::vector<size_t>& counts, const std::vector<size_t>& at) {
  size_t end = 0;
  for (size_t k = 0; k < counts.size(); ++k) end = std::max(end, at[k] + counts[k]);
  return end;
}

// How the blocks travel: the transport's frames (TCP); the shared board,
// small blocks inline, large ones read from the sender's memory; with no
// board, frames and single-copy reads of large blocks; and both where the
// reads are refused (HETCCL_SINGLE_COPY=0: inline on the board where the
// blocks fit, else frames).
enum Path { Tcp, Board, BoardLarge, BoardRefused, Frames, FramesRefused };

int exactRank(int rank, int n, const hetcclUniqueId& id, Path path) {
  if (path == Tcp) setenv("HETCCL_TRANSPORT", "tcp", 1);
  if (path == Frames || path == FramesRefused) setenv("HETCCL_BOARD_BYTES", "0", 1);
  if (path == BoardRefused || path == FramesRefused) setenv("HETCCL_SINGLE_COPY", "0", 1);
  hetcclComm_t comm = initRank(rank, n, id, 30000);
  RCHECK(comm, "init");
  std::vector<size_t> bases = {0, 1, 1001};
  if (path != Tcp && path != Board) bases = {1, 9000}; // 9000 floats: 36 KB, above 16 KiB
  for (hetcclDataType_t t : {hetcclFloat32, hetcclBfloat16, hetcclInt64, hetcclUint8})
    for (size_t base : bases) {
      size_t es = typeSize(t);
      std::vector<size_t> sc(n), rc(n);
      for (int r = 0; r < n; ++r) {
        sc[r] = countOf(rank, r, base);
        rc[r] = countOf(r, rank, base);
      }
      std::vector<size_t> so = reverseOffsets(sc), ro = forwardOffsets(rc);
      std::vector<char> in((span(sc, so) + 1) * es), out((span(rc, ro) + 1) * es, char(0x5a)), exp(out);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < sc[r]; ++i) put(t, in.data(), so[r] + i, valueOf(rank, r, i));
        for (size_t i = 0; i < rc[r]; ++i) put(t, exp.data(), ro[r] + i, valueOf(r, rank, i));
      }
      RCALL(hetcclAllToAllV(in.data(), sc.data(), so.data(), out.data(), rc.data(), ro.data(), t, comm));
      // The gaps between the blocks are left as they were.
      RCHECK(memcmp(exp.data(), out.data(), out.size()) == 0, "rank %d: type %d base %zu: wrong bytes", rank,
             int(t), base);
    }
  RCALL(hetcclBarrier(comm));
  RCALL(hetcclCommDestroy(comm));
  return 0;
}

class AllToAllV : public ::testing::TestWithParam<int> {};

TEST_P(AllToAllV, SmallBlocksThroughTheBoard) {
  auto r = runRanks(GetParam(), [](int rank, int n, const hetcclUniqueId& id) { return exactRank(rank, n, id, Board); });
  EXPECT_TRUE(allOk(r));
}

TEST_P(AllToAllV, LargeBlocksReadFromTheSendersMemory) {
  auto r = runRanks(GetParam(), [](int rank, int n, const hetcclUniqueId& id) { return exactRank(rank, n, id, BoardLarge); });
  EXPECT_TRUE(allOk(r));
}

TEST_P(AllToAllV, LargeBlocksOnTheBoardWhereReadsAreRefused) {
  auto r = runRanks(GetParam(), [](int rank, int n, const hetcclUniqueId& id) { return exactRank(rank, n, id, BoardRefused); });
  EXPECT_TRUE(allOk(r));
}

TEST_P(AllToAllV, FramesAndSingleCopyReadsWithoutABoard) {
  auto r = runRanks(GetParam(), [](int rank, int n, const hetcclUniqueId& id) { return exactRank(rank, n, id, Frames); });
  EXPECT_TRUE(allOk(r));
}

TEST_P(AllToAllV, FramesWithoutABoardWhereReadsAreRefused) {
  auto r = runRanks(GetParam(), [](int rank, int n, const hetcclUniqueId& id) { return exactRank(rank, n, id, FramesRefused); });
  EXPECT_TRUE(allOk(r));
}

TEST_P(AllToAllV, FramesOverTcp) {
  auto r = runRanks(GetParam(), [](int rank, int n, const hetcclUniqueId& id) { return exactRank(rank, n, id, Tcp); });
  EXPECT_TRUE(allOk(r));
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllToAllV, ::testing::Values(2, 3, 4));

// Two ranks whose counts for the blocks of rank 1 to rank 0 disagree: rank
// 0 must fail at once (within half the 5 s timeout) with `message`.
struct Disagreement {
  std::vector<size_t> sendCounts[2], recvCounts[2];
  const char* message;
};

int disagreeingRank(int rank, int n, const hetcclUniqueId& id, const Disagreement& d) {
  hetcclComm_t comm = initRank(rank, n, id, 5000);
  RCHECK(comm, "init");
  std::vector<float> in(16, 1.0f), out(16, 0.0f);
  std::vector<size_t> so = {0, 4}, ro = {0, 4};
  double t0 = nowSec();
  hetcclResult_t res = hetcclAllToAllV(in.data(), d.sendCounts[rank].data(), so.data(), out.data(),
                                       d.recvCounts[rank].data(), ro.data(), hetcclFloat32, comm);
  if (rank == 0) {
    RCHECK(res == hetcclInvalidUsage, "rank 0 got %s", hetcclGetErrorString(res));
    RCHECK(nowSec() - t0 < 2.5, "found only after %.1f s (the timeout is 5 s)", nowSec() - t0);
    RCHECK(strstr(hetcclGetLastError(comm), d.message) != nullptr, "message: %s", hetcclGetLastError(comm));
  }
  hetcclCommAbort(comm);
  return 0;
}

TEST(AllToAllVErrors, ACountThePairDisagreesOnFailsTheReceiverNamingTheBytes) {
  // Rank 1 sends rank 0 three floats; rank 0 expects five.
  static const Disagreement d{{{2, 3}, {3, 2}}, {{2, 5}, {3, 2}}, "rank 1 sent 12 bytes where this rank expects 20"};
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) { return disagreeingRank(rank, n, id, d); });
  EXPECT_TRUE(allOk(r));
}

TEST(AllToAllVErrors, AnEmptyBlockTheSenderFillsIsCaughtNotAwaited) {
  // Rank 1 sends rank 0 four floats; rank 0 expects none.
  static const Disagreement d{{{1, 0}, {4, 1}}, {{1, 0}, {0, 1}}, "rank 1 sent 16 bytes where this rank expects 0"};
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) { return disagreeingRank(rank, n, id, d); });
  EXPECT_TRUE(allOk(r));
}

TEST(AllToAllVErrors, BadArgumentsNameTheProblemAndLeaveTheCommUsable) {
  auto r = runRanks(1, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 5000);
    RCHECK(comm, "init");
    std::vector<float> buf(8, 1.0f), out(8, 0.0f);
    size_t two = 2, three = 3, zero = 0;
    RCHECK(hetcclAllToAllV(buf.data(), &two, &zero, out.data(), &three, &zero, hetcclFloat32, comm) ==
               hetcclInvalidArgument,
           "own block");
    RCHECK(strstr(hetcclGetLastError(comm), "sends itself 2 elements (sendcounts[0]) but expects 3") != nullptr,
           "message: %s", hetcclGetLastError(comm));
    RCHECK(hetcclAllToAllV(buf.data(), &two, &zero, buf.data() + 1, &two, &zero, hetcclFloat32, comm) ==
               hetcclInvalidArgument,
           "overlap");
    RCHECK(strstr(hetcclGetLastError(comm), "overlap") != nullptr, "message: %s", hetcclGetLastError(comm));
    RCHECK(hetcclAllToAllV(buf.data(), nullptr, &zero, out.data(), &two, &zero, hetcclFloat32, comm) ==
               hetcclInvalidArgument,
           "null counts");
    RCHECK(strstr(hetcclGetLastError(comm), "sendcounts is NULL") != nullptr, "message: %s",
           hetcclGetLastError(comm));
    RCALL(hetcclAllToAllV(buf.data(), &two, &zero, out.data(), &two, &zero, hetcclFloat32, comm));
    RCHECK(out[0] == 1.0f && out[1] == 1.0f && out[2] == 0.0f, "still usable");
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(AllToAllVErrors, ASigkilledPeerBecomesAnErrorWithinTwiceTheTimeout) {
  auto r = runRanks(3, [](int rank, int n, const hetcclUniqueId& id) {
    const int64_t timeoutMs = 2000;
    hetcclComm_t comm = initRank(rank, n, id, timeoutMs);
    RCHECK(comm, "init");
    std::vector<size_t> sc(n, 1 << 16), rc(n, 1 << 16), so(n), ro(n);
    for (int q = 0; q < n; ++q) so[q] = ro[q] = size_t(q) << 16;
    std::vector<float> in(size_t(n) << 16, 1.0f), out(size_t(n) << 16);
    for (int it = 0; it < 1000; ++it) {
      if (rank == 2 && it == 5) raise(SIGKILL);
      double t0 = nowSec();
      hetcclResult_t res = hetcclAllToAllV(in.data(), sc.data(), so.data(), out.data(), rc.data(), ro.data(),
                                           hetcclFloat32, comm);
      if (res != hetcclSuccess) {
        RCHECK(it >= 5, "failed before the fault");
        RCHECK(nowSec() - t0 < 2.0 * timeoutMs / 1000.0, "detection took %.3f s", nowSec() - t0);
        hetcclCommAbort(comm);
        return 0;
      }
    }
    RCHECK(false, "no error although rank 2 is gone");
  }, 60);
  EXPECT_EQ(r[2].signal, SIGKILL);
  r.pop_back();
  EXPECT_TRUE(allOk(r));
}

} // namespace
