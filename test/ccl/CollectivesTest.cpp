// Every collective x algorithm x dtype x op x size (0, 1, odd, larger odd)
// x in/out-of-place (the V collectives, which always run the ring, with
// uneven blocks, some empty, once per dtype, op and size), on 1..8 real processes, checked bit for bit against
// results known exactly in advance. Separate cases run the same matrix over
// TCP on loopback, over a two-host topology (hierarchical: shm inside each
// "host", TCP between) and on 64 MiB buffers.
#include "Exact.h"
#include "Harness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace hetccltest;

namespace {

const hetcclDataType_t kTypes[] = {hetcclFloat32, hetcclFloat64, hetcclFloat16, hetcclBfloat16,
                                   hetcclInt8,    hetcclUint8,   hetcclInt32,   hetcclInt64};
const hetcclRedOp_t kOps[] = {hetcclSum, hetcclProd, hetcclMin, hetcclMax, hetcclAvg};

struct Ctx {
  hetcclComm_t comm;
  int rank, n;
  std::string where;
};

#define MISMATCH(ctx, what, exp, got, bytes)                                                                   \
  do {                                                                                                         \
    if (memcmp(exp, got, bytes) != 0) {                                                                        \
      size_t at = 0;                                                                                           \
      while (at < (bytes) && static_cast<const char*>(exp)[at] == static_cast<const char*>(got)[at]) ++at;   \
      fprintf(stderr, "rank %d: %s %s: wrong bytes from offset %zu\n", (ctx).rank, (ctx).where.c_str(), what, at); \
      return 1;                                                                                                \
    }                                                                                                          \
  } while (0)

int checkAllReduce(Ctx& x, hetcclDataType_t t, hetcclRedOp_t op, size_t count, bool inPlace) {
  size_t es = typeSize(t);
  std::vector<char> in(count * es + 1), out(count * es + 1, char(0xa5)), exp(count * es + 1);
  for (size_t i = 0; i < count; ++i) {
    put(t, in.data(), i, genReduce(op, x.rank, i));
    expectReduce(t, op, x.n, exp.data(), i);
  }
  if (inPlace) {
    RCALL(hetcclAllReduce(in.data(), in.data(), count, t, op, x.comm));
    MISMATCH(x, "allreduce(in place)", exp.data(), in.data(), count * es);
  } else {
    RCALL(hetcclAllReduce(in.data(), out.data(), count, t, op, x.comm));
    MISMATCH(x, "allreduce", exp.data(), out.data(), count * es);
  }
  return 0;
}

int checkReduceScatter(Ctx& x, hetcclDataType_t t, hetcclRedOp_t op, size_t count, bool inPlace) {
  size_t es = typeSize(t), total = count * size_t(x.n);
  std::vector<char> in(total * es + 1), out(count * es + 1, char(0xa5));
  for (size_t i = 0; i < total; ++i) put(t, in.data(), i, genReduce(op, x.rank, i));
  // This rank's result is block `rank` of the full reduction.
  std::vector<char> e2(count * es + 1);
  {
    std::vector<char> full(total * es + 1);
    for (size_t i = 0; i < count; ++i) expectReduce(t, op, x.n, full.data(), i + size_t(x.rank) * count);
    memcpy(e2.data(), full.data() + size_t(x.rank) * count * es, count * es);
  }
  if (inPlace) {
    char* mine = in.data() + size_t(x.rank) * count * es;
    RCALL(hetcclReduceScatter(in.data(), mine, count, t, op, x.comm));
    MISMATCH(x, "reducescatter(in place)", e2.data(), mine, count * es);
  } else {
    RCALL(hetcclReduceScatter(in.data(), out.data(), count, t, op, x.comm));
    MISMATCH(x, "reducescatter", e2.data(), out.data(), count * es);
  }
  return 0;
}

// Uneven blocks for the V collectives: some ranks hold none.
std::vector<size_t> unevenCounts(size_t count, int n) {
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = r % 3 == 1 ? 0 : count + size_t(r);
  return counts;
}

size_t before(const std::vector<size_t>& counts, int rank) {
  size_t sum = 0;
  for (int r = 0; r < rank; ++r) sum += counts[r];
  return sum;
}

int checkReduceScatterV(Ctx& x, hetcclDataType_t t, hetcclRedOp_t op, size_t count, bool inPlace) {
  std::vector<size_t> counts = unevenCounts(count, x.n);
  size_t es = typeSize(t), total = before(counts, x.n), first = before(counts, x.rank), mine = counts[x.rank];
  std::vector<char> in(total * es + 1), out(mine * es + 1, char(0xa5)), full(total * es + 1);
  for (size_t i = 0; i < total; ++i) {
    put(t, in.data(), i, genReduce(op, x.rank, i));
    expectReduce(t, op, x.n, full.data(), i);
  }
  char* dst = inPlace ? in.data() + first * es : out.data();
  RCALL(hetcclReduceScatterV(in.data(), dst, counts.data(), t, op, x.comm));
  MISMATCH(x, inPlace ? "reducescatterv(in place)" : "reducescatterv", full.data() + first * es, dst, mine * es);
  return 0;
}

int checkAllGatherV(Ctx& x, hetcclDataType_t t, size_t count, bool inPlace) {
  std::vector<size_t> counts = unevenCounts(count, x.n);
  size_t es = typeSize(t), total = before(counts, x.n), first = before(counts, x.rank), mine = counts[x.rank];
  std::vector<char> in(mine * es + 1), out(total * es + 1, char(0xa5)), exp(total * es + 1);
  for (size_t i = 0; i < mine; ++i) put(t, in.data(), i, genData(x.rank, i));
  for (int r = 0; r < x.n; ++r)
    for (size_t i = 0; i < counts[r]; ++i) put(t, exp.data(), before(counts, r) + i, genData(r, i));
  const void* src = in.data();
  if (inPlace) {
    memcpy(out.data() + first * es, in.data(), mine * es);
    src = out.data() + first * es;
  }
  RCALL(hetcclAllGatherV(src, out.data(), counts.data(), t, x.comm));
  MISMATCH(x, inPlace ? "allgatherv(in place)" : "allgatherv", exp.data(), out.data(), total * es);
  return 0;
}

int checkReduce(Ctx& x, hetcclDataType_t t, hetcclRedOp_t op, size_t count, bool inPlace, int root) {
  size_t es = typeSize(t);
  std::vector<char> in(count * es + 1), out(count * es + 1, char(0xa5)), exp(count * es + 1);
  for (size_t i = 0; i < count; ++i) {
    put(t, in.data(), i, genReduce(op, x.rank, i));
    expectReduce(t, op, x.n, exp.data(), i);
  }
  char* dst = inPlace ? in.data() : out.data();
  RCALL(hetcclReduce(in.data(), dst, count, t, op, root, x.comm));
  if (x.rank == root) MISMATCH(x, "reduce", exp.data(), dst, count * es);
  return 0;
}

int checkAllGather(Ctx& x, hetcclDataType_t t, size_t count, bool inPlace) {
  size_t es = typeSize(t), total = count * size_t(x.n);
  std::vector<char> in(count * es + 1), out(total * es + 1, char(0xa5)), exp(total * es + 1);
  for (size_t i = 0; i < count; ++i) put(t, in.data(), i, genData(x.rank, i));
  for (int r = 0; r < x.n; ++r)
    for (size_t i = 0; i < count; ++i) put(t, exp.data(), size_t(r) * count + i, genData(r, i));
  const void* src = in.data();
  if (inPlace) {
    memcpy(out.data() + size_t(x.rank) * count * es, in.data(), count * es);
    src = out.data() + size_t(x.rank) * count * es;
  }
  RCALL(hetcclAllGather(src, out.data(), count, t, x.comm));
  MISMATCH(x, inPlace ? "allgather(in place)" : "allgather", exp.data(), out.data(), total * es);
  return 0;
}

int checkBroadcast(Ctx& x, hetcclDataType_t t, size_t count, bool inPlace, int root) {
  size_t es = typeSize(t);
  std::vector<char> in(count * es + 1), out(count * es + 1, char(0xa5)), exp(count * es + 1);
  for (size_t i = 0; i < count; ++i) {
    put(t, in.data(), i, genData(x.rank, i));
    put(t, exp.data(), i, genData(root, i));
  }
  char* dst = inPlace ? in.data() : out.data();
  RCALL(hetcclBroadcast(in.data(), dst, count, t, root, x.comm));
  MISMATCH(x, "broadcast", exp.data(), dst, count * es);
  return 0;
}

int checkAllToAll(Ctx& x, hetcclDataType_t t, size_t count, bool inPlace) {
  size_t es = typeSize(t), total = count * size_t(x.n);
  std::vector<char> in(total * es + 1), out(total * es + 1, char(0xa5)), exp(total * es + 1);
  // Block j of rank r's input is meant for rank j: value (r*8 + j + i).
  for (int j = 0; j < x.n; ++j)
    for (size_t i = 0; i < count; ++i) {
      put(t, in.data(), size_t(j) * count + i, (x.rank * 8 + j + int64_t(i)) % 100);
      put(t, exp.data(), size_t(j) * count + i, (j * 8 + x.rank + int64_t(i)) % 100);
    }
  char* dst = inPlace ? in.data() : out.data();
  RCALL(hetcclAllToAll(in.data(), dst, count, t, x.comm));
  MISMATCH(x, "alltoall", exp.data(), dst, total * es);
  return 0;
}

int runMatrix(hetcclComm_t comm, int rank, int n, const std::vector<size_t>& sizes) {
  Ctx x{comm, rank, n, ""};
  for (int a = 0; a < hetcclNumAlgos; ++a) {
    RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgo_t(a)));
    for (hetcclDataType_t t : kTypes)
      for (size_t count : sizes)
        for (int ip = 0; ip < 2; ++ip) {
          int root = int((a + count) % size_t(n));
          for (hetcclRedOp_t op : kOps) {
            x.where = std::string(hetcclAlgoName(hetcclAlgo_t(a))) + " type " + std::to_string(int(t)) + " op " +
                      std::to_string(int(op)) + " count " + std::to_string(count);
            if (checkAllReduce(x, t, op, count, ip)) return 1;
            if (checkReduceScatter(x, t, op, count, ip)) return 1;
            if (checkReduce(x, t, op, count, ip, root)) return 1;
            // The V collectives always run the ring: once, not per algorithm.
            if (a == hetcclAlgoAuto && checkReduceScatterV(x, t, op, count, ip)) return 1;
          }
          x.where = std::string(hetcclAlgoName(hetcclAlgo_t(a))) + " type " + std::to_string(int(t)) + " count " +
                    std::to_string(count);
          if (checkAllGather(x, t, count, ip)) return 1;
          if (checkBroadcast(x, t, count, ip, root)) return 1;
          if (checkAllToAll(x, t, count, ip)) return 1;
          if (a == hetcclAlgoAuto && checkAllGatherV(x, t, count, ip)) return 1;
        }
  }
  RCALL(hetcclBarrier(comm));
  return 0;
}

int matrixRank(int rank, int n, const hetcclUniqueId& id, const std::vector<size_t>& sizes) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = 60000;
  hetcclComm_t comm;
  RCALL(hetcclCommInitRank(&comm, n, id, rank, &cfg));
  int rc = runMatrix(comm, rank, n, sizes);
  RCALL(hetcclCommDestroy(comm));
  return rc;
}

const std::vector<size_t> kSizes = {0, 1, 7, 1001};

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, ShmEveryAlgorithmTypeOpSizeAndPlacement) {
  int n = GetParam();
  auto r = runRanks(n, [](int rank, int nr, const hetcclUniqueId& id) { return matrixRank(rank, nr, id, kSizes); }, 240);
  EXPECT_TRUE(allOk(r));
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Range(1, 9));

TEST(CollectivesTcp, LoopbackSocketsThreeAndFourRanks) {
  for (int n : {3, 4}) {
    auto r = runRanks(n, [](int rank, int nr, const hetcclUniqueId& id) {
      setenv("HETCCL_TRANSPORT", "tcp", 1);
      return matrixRank(rank, nr, id, {0, 1, 1001});
    }, 240);
    EXPECT_TRUE(allOk(r)) << n << " ranks";
  }
}

// Two pretend hosts on one machine: shm inside each, TCP between, so the
// hierarchical algorithm really runs its three phases over two transports.
TEST(CollectivesHierarchical, TwoHostsUniformAndUneven) {
  for (int n : {4, 5, 6}) {
    auto r = runRanks(n, [](int rank, int nr, const hetcclUniqueId& id) {
      setenv("HETCCL_HOST", rank < (nr + 1) / 2 ? "hostA" : "hostB", 1);
      return matrixRank(rank, nr, id, {1, 1001});
    }, 240);
    EXPECT_TRUE(allOk(r)) << n << " ranks";
  }
}

// Mixed device kinds group separately even on one host.
TEST(CollectivesHierarchical, GroupsByDeviceKindAndPicksHierarchicalAcrossHosts) {
  auto r = runRanks(4, [](int rank, int nr, const hetcclUniqueId& id) {
    setenv("HETCCL_HOST", rank < 2 ? "hostA" : "hostB", 1);
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.timeoutMs = 30000;
    hetcclComm_t comm;
    RCALL(hetcclCommInitRank(&comm, nr, id, rank, &cfg));
    hetcclAlgo_t a;
    RCALL(hetcclCommPickAlgorithm(comm, 64 << 20, &a));
    RCHECK(a == hetcclAlgoHierarchical, "auto picked %s for 64 MiB on two hosts", hetcclAlgoName(a));
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

int largeRank(int rank, int n, const hetcclUniqueId& id) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = 120000;
  hetcclComm_t comm;
  RCALL(hetcclCommInitRank(&comm, n, id, rank, &cfg));
  Ctx x{comm, rank, n, ""};
  const size_t bytes = 64u << 20;
  for (int a = 0; a < hetcclNumAlgos; ++a) {
    RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgo_t(a)));
    x.where = std::string("64MiB ") + hetcclAlgoName(hetcclAlgo_t(a));
    if (checkAllReduce(x, hetcclFloat32, hetcclSum, bytes / 4, a % 2 == 0)) return 1;
  }
  RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgoAuto));
  x.where = "64MiB auto";
  if (checkAllReduce(x, hetcclBfloat16, hetcclMax, bytes / 2, false)) return 1;
  if (checkAllGather(x, hetcclFloat32, bytes / 4 / size_t(n), false)) return 1;
  if (checkReduceScatter(x, hetcclInt32, hetcclSum, bytes / 4 / size_t(n), true)) return 1;
  if (checkBroadcast(x, hetcclUint8, bytes, false, n - 1)) return 1;
  RCALL(hetcclCommDestroy(comm));
  return 0;
}

TEST(CollectivesLarge, SixtyFourMiBThreeRanks) {
  EXPECT_TRUE(allOk(runRanks(3, largeRank, 300)));
}

} // namespace
