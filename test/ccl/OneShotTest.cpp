// The one-shot all-reduce (lib/CCL/Algorithms/OneShot.cpp): what `auto`
// runs for small messages among ranks of one host. The collective matrix
// (CollectivesTest) checks its results for every type and op; these check
// what is particular to it: the same bits on every rank in rank order, the
// two board slots under skewed ranks, and its error paths.
#include "BoardTests.h"
#include "Harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <signal.h>
#include <string>
#include <unistd.h>
#include <vector>

using namespace hetccltest;


// 300 calls of sizes up to 16 KiB, every rank sleeping now and then so some
// run ahead by a call or two: every result must equal ((x0 + x1) + x2) + x3
// bit for bit on every rank.
TEST(OneShot, RankOrderSumOnEveryRankUnderSkew) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    std::mt19937 g(uint32_t(rank + 7));
    for (int k = 0; k < 300; ++k) {
      size_t count = 1 + size_t(k * 37) % 4096;
      std::vector<float> buf = orderSensitiveInput(rank, k, count);
      if (g() % 8 == 0) usleep(g() % 300);
      RCALL(hetcclAllReduce(buf.data(), buf.data(), count, hetcclFloat32, hetcclSum, comm));
      std::vector<float> want = rankOrderSum(n, k, count);
      RCHECK(memcmp(want.data(), buf.data(), count * 4) == 0, "call %d (%zu floats) differs from the rank-order sum",
             k, count);
    }
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(OneShot, MismatchedCountsFailEveryRankNamingTheBytes) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = initRank(rank, n, id, 30000);
    RCHECK(comm, "init");
    RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgoOneShot)); // two ranks' auto is two-shot
    std::vector<float> buf(12, 1.0f);
    size_t count = rank == 0 ? 10 : 12;
    hetcclResult_t res = hetcclAllReduce(buf.data(), buf.data(), count, hetcclFloat32, hetcclSum, comm);
    std::string msg = hetcclGetLastError(comm);
    RCHECK(res == hetcclInvalidUsage, "got %s: %s", hetcclGetErrorString(res), msg.c_str());
    const char* want = rank == 0 ? "rank 1 all-reduces 48 bytes where this rank has 40"
                                 : "rank 0 all-reduces 40 bytes where this rank has 48";
    RCHECK(msg.find(want) != std::string::npos, "message: %s", msg.c_str());
    hetcclCommDestroy(comm);
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(OneShot, SigkilledPeerEndsTheWaitWithAnError) {
  auto r = runRanks(
      3, [](int rank, int n, const hetcclUniqueId& id) { return peerKilledBetweenCalls(rank, n, id, 1); }, 120, {2});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].status, 0);
  EXPECT_EQ(r[1].status, 0);
  EXPECT_EQ(r[2].signal, SIGKILL);
}

TEST(OneShot, LimitsThatDifferAcrossRanksAreAClearError) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    if (rank == 1) setenv("HETCCL_ONESHOT_BYTES", "4096", 1);
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.timeoutMs = 10000;
    hetcclComm_t comm = nullptr;
    hetcclResult_t res = hetcclCommInitRank(&comm, n, id, rank, &cfg);
    std::string msg = hetcclGetLastError(nullptr);
    RCHECK(res != hetcclSuccess, "init succeeded with different HETCCL_ONESHOT_BYTES");
    printf("rank %d: %s\n", rank, msg.c_str());
    // A rank may instead see the other give up first; one must name it.
    return msg.find("HETCCL_ONESHOT_BYTES") != std::string::npos ? 0 : 2;
  }, 60);
  ASSERT_EQ(r.size(), 2u);
  for (const auto& x : r) EXPECT_TRUE(x.status == 0 || x.status == 2) << "status " << x.status;
  EXPECT_TRUE(r[0].status == 0 || r[1].status == 0) << "no rank named HETCCL_ONESHOT_BYTES";
}
