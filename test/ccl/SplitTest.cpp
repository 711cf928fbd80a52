// hetcclCommSplit: 4 real processes split into stages / replicas, reversed
// keys, NOCOLOR, singletons, splits of splits, several splits of one parent
// alive at once, the parent still usable, int8 compression inherited by a
// split, env bootstrap (HETCCL_ROOT must not be reused by the split), bad
// arguments, abort, and a SIGKILLed rank (an error within the timeout, no
// hang).
#include "Harness.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <netinet/in.h>
#include <random>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace hetccltest;

namespace {

hetcclComm_t initWorld(int rank, int n, const hetcclUniqueId& id, int64_t timeoutMs = 60000,
                       hetcclCompression_t z = hetcclCompressNone) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = timeoutMs;
  cfg.compression = z;
  hetcclComm_t comm = nullptr;
  if (hetcclCommInitRank(&comm, n, id, rank, &cfg) != hetcclSuccess) {
    fprintf(stderr, "rank %d init failed: %s\n", rank, hetcclGetLastError(nullptr));
    return nullptr;
  }
  return comm;
}

// Every rank of `comm` contributes `mine`; returns what each rank gave.
int gatherInts(hetcclComm_t comm, int mine, std::vector<int>* out) {
  int n = 0;
  RCALL(hetcclCommCount(comm, &n));
  out->assign(size_t(n), -1);
  int32_t v = mine;
  RCALL(hetcclAllGather(&v, out->data(), 1, hetcclInt32, comm));
  return 0;
}

// All-reduce (sum) of `count` int32 values v[i] = base + i on each rank;
// checks the result is sum(base) * 1 + n * i, i.e. only this comm's ranks.
int checkSum(hetcclComm_t comm, int base, int expectBaseSum, size_t count) {
  int n = 0;
  RCALL(hetcclCommCount(comm, &n));
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = base + int32_t(i);
  RCALL(hetcclAllReduce(v.data(), v.data(), count, hetcclInt32, hetcclSum, comm));
  for (size_t i = 0; i < count; ++i)
    RCHECK(v[i] == expectBaseSum + n * int32_t(i), "element %zu: %d, expected %d", i, v[i], expectBaseSum + n * int32_t(i));
  return 0;
}

// color(rank) -> 2 colors of 2. Each color runs a different sequence of
// all-reduces (count and number differ), so crossed traffic would show as a
// wrong sum or a header mismatch; then the parent runs one of its own.
int twoByTwo(int rank, int n, const hetcclUniqueId& id, int (*colorOf)(int), bool tcp) {
  if (tcp) setenv("HETCCL_TRANSPORT", "tcp", 1);
  hetcclComm_t world = initWorld(rank, n, id);
  RCHECK(world, "init");
  int color = colorOf(rank);
  hetcclComm_t sub = nullptr;
  RCALL(hetcclCommSplit(world, color, rank, &sub, nullptr));
  RCHECK(sub, "no communicator for color %d", color);
  int sn = 0, sr = -1;
  RCALL(hetcclCommCount(sub, &sn));
  RCALL(hetcclCommUserRank(sub, &sr));
  RCHECK(sn == 2, "size %d", sn);
  std::vector<int> members;
  if (gatherInts(sub, rank, &members)) return 1;
  int expect = 0;
  for (int r = 0, k = 0; r < n; ++r)
    if (colorOf(r) == color) {
      RCHECK(members[size_t(k)] == r, "new rank %d is parent rank %d, expected %d", k, members[size_t(k)], r);
      if (r == rank) RCHECK(sr == k, "my new rank %d, expected %d", sr, k);
      expect += 100 * (r + 1);
      ++k;
    }
  int rounds = color == 0 ? 3 : 5;
  size_t count = color == 0 ? 1001 : 70000;
  for (int it = 0; it < rounds; ++it)
    if (checkSum(sub, 100 * (rank + 1), expect, count)) return 1;
  // Parent still usable, and its sum spans all four ranks.
  if (checkSum(world, rank + 1, n * (n + 1) / 2, 4097)) return 1;
  RCALL(hetcclCommDestroy(sub));
  if (checkSum(world, rank + 1, n * (n + 1) / 2, 3)) return 1;
  RCALL(hetcclCommDestroy(world));
  return 0;
}

int stageOf(int r) { return r / 2; }
int replicaOf(int r) { return r % 2; }

TEST(Split, StagesColorRankDiv2) {
  EXPECT_TRUE(allOk(runRanks(4, [](int r, int n, const hetcclUniqueId& id) { return twoByTwo(r, n, id, stageOf, false); })));
}

TEST(Split, ReplicasColorRankMod2) {
  EXPECT_TRUE(allOk(runRanks(4, [](int r, int n, const hetcclUniqueId& id) { return twoByTwo(r, n, id, replicaOf, false); })));
}

TEST(Split, ReplicasOverTcp) {
  EXPECT_TRUE(allOk(runRanks(4, [](int r, int n, const hetcclUniqueId& id) { return twoByTwo(r, n, id, replicaOf, true); })));
}

// One color, key = n - rank: the new order is reversed. Equal keys keep the
// parent order.
TEST(Split, KeysOrderRanksAndTiesKeepParentOrder) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id);
    RCHECK(world, "init");
    hetcclComm_t rev = nullptr, same = nullptr;
    RCALL(hetcclCommSplit(world, 0, n - rank, &rev, nullptr));
    int nr = -1;
    RCALL(hetcclCommUserRank(rev, &nr));
    RCHECK(nr == n - 1 - rank, "reversed: parent %d got new rank %d", rank, nr);
    std::vector<int> members;
    if (gatherInts(rev, rank, &members)) return 1;
    for (int k = 0; k < n; ++k) RCHECK(members[size_t(k)] == n - 1 - k, "reversed: new rank %d is parent %d", k, members[size_t(k)]);
    if (checkSum(rev, rank, n * (n - 1) / 2, 333)) return 1;
    RCALL(hetcclCommSplit(world, 5, 42, &same, nullptr));
    RCALL(hetcclCommUserRank(same, &nr));
    RCHECK(nr == rank, "tied keys: parent %d got new rank %d", rank, nr);
    // Rank 0 of the reversed comm broadcasts: everyone gets parent rank 3's value.
    int32_t v = rank * 11;
    RCALL(hetcclBroadcast(&v, &v, 1, hetcclInt32, 0, rev));
    RCHECK(v == (n - 1) * 11, "broadcast from new rank 0 gave %d", v);
    RCALL(hetcclCommDestroy(rev));
    RCALL(hetcclCommDestroy(same));
    RCALL(hetcclCommDestroy(world));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Split, NoColorGetsNullAndOthersProceed) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id);
    RCHECK(world, "init");
    bool out = rank == 0 || rank == 3;
    hetcclComm_t sub = reinterpret_cast<hetcclComm_t>(&sub); // must be overwritten
    RCALL(hetcclCommSplit(world, out ? HETCCL_SPLIT_NOCOLOR : 7, 0, &sub, nullptr));
    if (out) {
      RCHECK(sub == nullptr, "NOCOLOR rank got a communicator");
    } else {
      int sn = 0;
      RCALL(hetcclCommCount(sub, &sn));
      RCHECK(sn == 2, "size %d", sn);
      if (checkSum(sub, rank, 1 + 2, 100)) return 1;
      RCALL(hetcclCommDestroy(sub));
    }
    if (checkSum(world, rank, n * (n - 1) / 2, 100)) return 1;
    RCALL(hetcclCommDestroy(world));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Split, EveryRankAloneInItsColor) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id);
    RCHECK(world, "init");
    hetcclComm_t self = nullptr;
    RCALL(hetcclCommSplit(world, rank, 0, &self, nullptr));
    int sn = 0, sr = -1;
    RCALL(hetcclCommCount(self, &sn));
    RCALL(hetcclCommUserRank(self, &sr));
    RCHECK(sn == 1 && sr == 0, "size %d rank %d", sn, sr);
    if (checkSum(self, rank * 7, rank * 7, 50)) return 1;
    std::vector<float> g(16, float(rank));
    RCALL(hetcclAllGather(g.data(), g.data(), g.size(), hetcclFloat32, self));
    RCALL(hetcclBarrier(self));
    RCALL(hetcclCommDestroy(self));
    if (checkSum(world, rank, n * (n - 1) / 2, 10)) return 1;
    RCALL(hetcclCommDestroy(world));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

// world -> A (one color, reversed keys) -> B (A's parity) and C (A's
// singletons); and world split twice more (stages and replicas) with all
// five communicators alive and used in turn.
TEST(Split, SplitOfASplitAndSeveralSplitsOfOneParent) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id);
    RCHECK(world, "init");
    hetcclComm_t a = nullptr, b = nullptr, cc = nullptr, stage = nullptr, rep = nullptr;
    RCALL(hetcclCommSplit(world, 0, -rank, &a, nullptr));
    int ar = -1;
    RCALL(hetcclCommUserRank(a, &ar));
    RCHECK(ar == n - 1 - rank, "A rank %d", ar);
    RCALL(hetcclCommSplit(a, ar % 2, ar, &b, nullptr));
    RCALL(hetcclCommSplit(a, ar, 0, &cc, nullptr));
    RCALL(hetcclCommSplit(world, rank / 2, rank, &stage, nullptr));
    RCALL(hetcclCommSplit(world, rank % 2, rank, &rep, nullptr));
    // B: A ranks {0,2} = parents {3,1}, {1,3} = parents {2,0}.
    std::vector<int> members;
    if (gatherInts(b, rank, &members)) return 1;
    std::vector<int> want = ar % 2 == 0 ? std::vector<int>{3, 1} : std::vector<int>{2, 0};
    RCHECK(members == want, "B members %d,%d", members[0], members[1]);
    for (int it = 0; it < 2; ++it) {
      if (checkSum(b, rank, want[0] + want[1], 513)) return 1;
      if (checkSum(stage, rank, rank / 2 == 0 ? 0 + 1 : 2 + 3, 65)) return 1;
      if (checkSum(cc, rank, rank, 9)) return 1;
      if (checkSum(rep, rank, rank % 2 == 0 ? 0 + 2 : 1 + 3, 4000)) return 1;
      if (checkSum(a, rank, 6, 17)) return 1;
      if (checkSum(world, rank, 6, 31)) return 1;
    }
    RCALL(hetcclCommDestroy(b));
    RCALL(hetcclCommDestroy(cc));
    RCALL(hetcclCommDestroy(a));
    if (checkSum(stage, rank, rank / 2 == 0 ? 1 : 5, 8)) return 1;
    RCALL(hetcclCommDestroy(stage));
    RCALL(hetcclCommDestroy(rep));
    RCALL(hetcclCommDestroy(world));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

// A split comm with int8 compression: inherited from a parent configured
// with it (config NULL), or asked for in the split's own config. Bytes on
// the wire drop to ~1/4 and the error stays within int8's bound.
int int8Rank(int rank, int n, const hetcclUniqueId& id, bool inherit) {
  hetcclComm_t world = initWorld(rank, n, id, 60000, inherit ? hetcclCompressInt8 : hetcclCompressNone);
  RCHECK(world, "init");
  hetcclComm_t sub = nullptr;
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = 60000;
  cfg.compression = hetcclCompressInt8;
  cfg.algo = hetcclAlgoRing;
  RCALL(hetcclCommSplit(world, rank % 2, rank, &sub, inherit ? nullptr : &cfg));
  RCALL(hetcclCommSetAlgorithm(sub, hetcclAlgoRing));
  const size_t count = 1 << 20;
  auto input = [&](int r) {
    std::mt19937 g(77 + r);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(count);
    for (auto& x : v) x = u(g);
    return v;
  };
  std::vector<float> exact(count, 0.0f), mine = input(rank);
  for (int r = rank % 2; r < n; r += 2) {
    std::vector<float> o = input(r);
    for (size_t i = 0; i < count; ++i) exact[i] += o[i];
  }
  uint64_t b0, b1;
  RCALL(hetcclCommGetBytesSent(sub, &b0));
  RCALL(hetcclAllReduce(mine.data(), mine.data(), count, hetcclFloat32, hetcclSum, sub));
  RCALL(hetcclCommGetBytesSent(sub, &b1));
  double maxErr = 0;
  for (size_t i = 0; i < count; ++i) maxErr = std::max(maxErr, double(std::fabs(mine[i] - exact[i])));
  // 2-rank ring: f32 would send count*4 bytes per rank.
  double ratio = double(b1 - b0) / double(count * 4);
  double bound = 2 * 2 / 254.0;
  printf("int8 on split comm (%s), rank %d: %.4f of f32 bytes, max error %.5f (bound %.5f)\n",
         inherit ? "inherited" : "config", rank, ratio, maxErr, bound);
  RCHECK(ratio <= 0.26, "ratio %.4f", ratio);
  RCHECK(maxErr <= bound, "error %.6f", maxErr);
  RCHECK(maxErr > 0, "no error at all: compression did not run");
  // The parent (compression none in the config case) stays exact.
  if (!inherit && checkSum(world, rank, 6, 1000)) return 1;
  RCALL(hetcclCommDestroy(sub));
  RCALL(hetcclCommDestroy(world));
  return 0;
}

TEST(Split, Int8CompressionInheritedBySplit) {
  EXPECT_TRUE(allOk(runRanks(4, [](int r, int n, const hetcclUniqueId& id) { return int8Rank(r, n, id, true); })));
}

TEST(Split, Int8CompressionFromSplitConfig) {
  EXPECT_TRUE(allOk(runRanks(4, [](int r, int n, const hetcclUniqueId& id) { return int8Rank(r, n, id, false); })));
}

int freePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return -1;
  close(s);
  return ntohs(a.sin_port);
}

// Bootstrapped from HETCCL_ROOT / MASTER_ADDR: the two leaders of a split
// must each pick a fresh port, not the parent's root (two colors on one host
// would collide there).
TEST(Split, EnvBootstrappedParentDoesNotReuseTheRootPort) {
  int port = freePort();
  ASSERT_GT(port, 0);
  auto r = runRanks(4, [port](int rank, int n, const hetcclUniqueId&) {
    std::string root = "127.0.0.1:" + std::to_string(port);
    setenv("HETCCL_ROOT", root.c_str(), 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
    setenv("HETCCL_TOKEN", "split-test-token-0123456789", 1);
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.timeoutMs = 30000;
    hetcclComm_t world = nullptr;
    RCALL(hetcclCommInitFromEnv(&world, &cfg));
    hetcclComm_t sub = nullptr;
    RCALL(hetcclCommSplit(world, rank % 2, rank, &sub, nullptr));
    if (checkSum(sub, rank, rank % 2 == 0 ? 2 : 4, 100)) return 1;
    hetcclComm_t sub2 = nullptr;
    RCALL(hetcclCommSplit(world, rank / 2, rank, &sub2, nullptr));
    if (checkSum(sub2, rank, rank / 2 == 0 ? 1 : 5, 100)) return 1;
    RCALL(hetcclCommDestroy(sub));
    RCALL(hetcclCommDestroy(sub2));
    RCALL(hetcclCommDestroy(world));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

// One rank passes a bad color: every rank fails with InvalidArgument,
// nobody waits for a timeout, and the parent is still usable.
TEST(Split, BadColorOnOneRankFailsEveryRankAndLeavesTheParentUsable) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id, 20000);
    RCHECK(world, "init");
    hetcclComm_t sub = nullptr;
    double t0 = nowSec();
    hetcclResult_t res = hetcclCommSplit(world, rank == 2 ? -5 : 0, 0, &sub, nullptr);
    double dt = nowSec() - t0;
    RCHECK(res == hetcclInvalidArgument, "got %s", hetcclGetErrorString(res));
    RCHECK(sub == nullptr, "newcomm set on failure");
    RCHECK(dt < 5.0, "took %.3f s", dt);
    if (rank == 0) printf("bad color: %s\n", hetcclGetLastError(nullptr));
    RCHECK(hetcclCommSplit(world, 0, 0, nullptr, nullptr) == hetcclInvalidArgument, "NULL newcomm accepted");
    if (checkSum(world, rank, 6, 10)) return 1;
    RCALL(hetcclCommSplit(world, 0, 0, &sub, nullptr));
    if (checkSum(sub, rank, 6, 10)) return 1;
    RCALL(hetcclCommDestroy(sub));
    RCALL(hetcclCommDestroy(world));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

// Rank 3 is SIGKILLed after init, before the split: ranks 0-2 get an error
// from hetcclCommSplit within the timeout (no hang, no communicator).
TEST(Split, SigkilledRankBeforeSplitIsAnErrorNotAHang) {
  const int64_t timeoutMs = 2000;
  auto r = runRanks(4, [timeoutMs](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id, timeoutMs);
    RCHECK(world, "init");
    RCALL(hetcclBarrier(world));
    if (rank == 3) raise(SIGKILL);
    usleep(100000);
    hetcclComm_t sub = nullptr;
    double t0 = nowSec();
    hetcclResult_t res = hetcclCommSplit(world, rank / 2, rank, &sub, nullptr);
    double dt = nowSec() - t0;
    printf("split with a SIGKILLed rank: rank %d got '%s' after %.3f s (timeout %.1f s): %s\n", rank,
           hetcclGetErrorString(res), dt, timeoutMs / 1000.0, hetcclGetLastError(nullptr));
    RCHECK(res != hetcclSuccess, "split succeeded without rank 3");
    RCHECK(sub == nullptr, "newcomm set on failure");
    RCHECK(dt < 1.5 * timeoutMs / 1000.0, "took %.3f s", dt);
    hetcclResult_t async;
    RCALL(hetcclCommGetAsyncError(world, &async));
    RCHECK(async != hetcclSuccess, "parent not marked failed");
    hetcclCommAbort(world);
    return 0;
  }, 60);
  EXPECT_EQ(r[3].signal, SIGKILL);
  r.pop_back();
  EXPECT_TRUE(allOk(r));
}

// Rank 3 fails inside the new communicator's init (after the id exchange:
// its HETCCL_SHM_BYTES is only checked once the rendezvous is done) and
// leaves. Its partner, rank 2, gets an error well within the timeout; the
// other color is unaffected.
TEST(Split, MemberFailingDuringTheNewInitIsAnErrorForItsPartner) {
  const int64_t timeoutMs = 3000;
  auto r = runRanks(4, [timeoutMs](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id, timeoutMs);
    RCHECK(world, "init");
    if (rank == 3) setenv("HETCCL_SHM_BYTES", "5", 1);
    hetcclComm_t sub = nullptr;
    double t0 = nowSec();
    hetcclResult_t res = hetcclCommSplit(world, rank / 2, rank, &sub, nullptr);
    double dt = nowSec() - t0;
    if (rank >= 2) {
      printf("member failing in the new init: rank %d got '%s' after %.3f s (timeout %.1f s): %s\n", rank,
             hetcclGetErrorString(res), dt, timeoutMs / 1000.0, hetcclGetLastError(nullptr));
      RCHECK(res != hetcclSuccess && sub == nullptr, "split succeeded");
      RCHECK(dt < 1.5 * timeoutMs / 1000.0, "took %.3f s", dt);
      hetcclCommAbort(world);
      return 0;
    }
    RCALL(res);
    if (checkSum(sub, rank, 1, 100)) return 1;
    RCALL(hetcclCommDestroy(sub));
    hetcclCommAbort(world);
    return 0;
  }, 60);
  EXPECT_TRUE(allOk(r));
}

// A member that never calls split: its color's leader blocks; aborting the
// parent from another thread ends the split at once.
TEST(Split, AbortOfTheParentEndsABlockedSplit) {
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t world = initWorld(rank, n, id, 30000);
    RCHECK(world, "init");
    if (rank == 1) {
      usleep(1500000);
      hetcclCommAbort(world);
      return 0;
    }
    std::atomic<int> res{-1};
    std::atomic<double> returned{0};
    hetcclComm_t sub = nullptr;
    std::thread t([&] {
      res = hetcclCommSplit(world, 0, 0, &sub, nullptr);
      returned = nowSec();
    });
    usleep(300000);
    double t0 = nowSec();
    RCALL(hetcclCommAbort(world));
    t.join();
    double dt = returned.load() - t0;
    printf("abort during split: returned %.3f s after hetcclCommAbort\n", dt);
    RCHECK(res == hetcclAborted, "split returned %d", res.load());
    RCHECK(sub == nullptr, "newcomm set on abort");
    RCHECK(dt < 0.5, "took %.3f s", dt);
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

} // namespace
