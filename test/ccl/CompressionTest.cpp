// Compression: bytes really leave the process 4x (int8) or 2x (fp16/bf16)
// smaller, counted inside the transports; results stay within the
// documented error bound and are bit-identical on every rank; top-k with
// error feedback trains a least-squares model to the uncompressed loss.
#include "Harness.h"

#include "Types/DataType.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace hetccltest;

namespace {

hetcclComm_t init(int rank, int n, const hetcclUniqueId& id) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = 60000;
  hetcclComm_t comm = nullptr;
  if (hetcclCommInitRank(&comm, n, id, rank, &cfg) != hetcclSuccess) return nullptr;
  return comm;
}

std::vector<float> randomInput(int rank, size_t n) {
  std::mt19937 g(1234 + rank);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

// Every rank gets rank 0's result and compares bits.
int checkIdentical(hetcclComm_t comm, const std::vector<float>& r) {
  std::vector<float> ref(r);
  RCALL(hetcclBroadcast(ref.data(), ref.data(), ref.size(), hetcclFloat32, 0, comm));
  RCHECK(memcmp(ref.data(), r.data(), r.size() * 4) == 0, "ranks disagree on the compressed result");
  return 0;
}

// Bytes this rank puts on the wire for one all-reduce of `count` floats.
int measure(hetcclComm_t comm, std::vector<float>& buf, uint64_t* bytes) {
  uint64_t b0, b1;
  RCALL(hetcclCommGetBytesSent(comm, &b0));
  RCALL(hetcclAllReduce(buf.data(), buf.data(), buf.size(), hetcclFloat32, hetcclSum, comm));
  RCALL(hetcclCommGetBytesSent(comm, &b1));
  *bytes = b1 - b0;
  return 0;
}

int codecRank(int rank, int n, const hetcclUniqueId& id, hetcclCompression_t z, double maxRatio, double relErr) {
  hetcclComm_t comm = init(rank, n, id);
  RCHECK(comm, "init");
  const size_t count = 4u << 20; // 16 MiB of f32
  std::vector<float> in = randomInput(rank, count);
  std::vector<double> exact(count, 0.0);
  for (int r = 0; r < n; ++r) {
    std::vector<float> o = randomInput(r, count);
    for (size_t i = 0; i < count; ++i) exact[i] += o[i];
  }
  RCALL(hetcclCommSetAlgorithm(comm, hetcclAlgoRing));
  std::vector<float> plain(in), packed(in);
  uint64_t bPlain, bPacked;
  if (measure(comm, plain, &bPlain)) return 1;
  RCALL(hetcclCommSetCompression(comm, z, 0));
  if (measure(comm, packed, &bPacked)) return 1;
  double ratio = double(bPacked) / double(bPlain);
  double maxErr = 0;
  for (size_t i = 0; i < count; ++i) maxErr = std::max(maxErr, std::fabs(packed[i] - exact[i]));
  // Partial sums stay below n in magnitude (inputs in [-1, 1]); each of the
  // n encodings on a value's path adds at most relErr of that.
  double bound = n * n * relErr;
  if (rank == 0)
    printf("compression %d, %d ranks: %llu bytes vs %llu for f32 = %.4f; max abs error %.5f (bound %.5f)\n", int(z), n,
           (unsigned long long)bPacked, (unsigned long long)bPlain, ratio, maxErr, bound);
  RCHECK(ratio <= maxRatio, "ratio %.4f above %.4f", ratio, maxRatio);
  RCHECK(maxErr <= bound, "error %.6f above bound %.6f", maxErr, bound);
  if (checkIdentical(comm, packed)) return 1;
  RCALL(hetcclCommDestroy(comm));
  return 0;
}

TEST(Compression, Int8MovesAtMost26PercentOfF32Bytes) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    return codecRank(rank, n, id, hetcclCompressInt8, 0.26, 1.0 / 254);
  }, 240);
  EXPECT_TRUE(allOk(r));
}

TEST(Compression, Fp16AndBf16HalveTheBytes) {
  auto r = runRanks(3, [](int rank, int n, const hetcclUniqueId& id) {
    if (codecRank(rank, n, id, hetcclCompressFp16, 0.51, 1.0 / 2048)) return 1;
    return codecRank(rank, n, id, hetcclCompressBf16, 0.51, 1.0 / 256);
  }, 240);
  EXPECT_TRUE(allOk(r));
}

// Least squares, data sharded over 4 ranks, gradient averaged by all-reduce.
double train(hetcclComm_t comm, int rank, int n, bool topk, double ratio, int steps, std::vector<float>* xOut) {
  const int d = 64, m = 128;
  std::mt19937 g(99 + rank);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::mt19937 gt(7); // same x_true on every rank
  std::vector<float> xt(d);
  for (auto& v : xt) v = nd(gt);
  std::vector<float> A(size_t(m) * d), b(m);
  for (auto& v : A) v = nd(g);
  for (int i = 0; i < m; ++i) {
    double s = 0;
    for (int j = 0; j < d; ++j) s += A[size_t(i) * d + j] * xt[j];
    b[i] = float(s + 0.1 * nd(g));
  }
  std::vector<float> x(d, 0.0f), grad(d), resid(m);
  hetcclCommSetCompression(comm, topk ? hetcclCompressTopK : hetcclCompressNone, ratio);
  hetcclCommResetErrorFeedback(comm, grad.data());
  double loss = 0;
  for (int s = 0; s <= steps; ++s) {
    double local = 0;
    for (int i = 0; i < m; ++i) {
      double r = -b[i];
      for (int j = 0; j < d; ++j) r += A[size_t(i) * d + j] * x[j];
      resid[i] = float(r);
      local += r * r;
    }
    double tot = local;
    if (hetcclAllReduce(&tot, &tot, 1, hetcclFloat64, hetcclSum, comm) != hetcclSuccess) return -1;
    loss = tot / (2.0 * m * n);
    if (s == steps) break;
    for (int j = 0; j < d; ++j) {
      double gj = 0;
      for (int i = 0; i < m; ++i) gj += A[size_t(i) * d + j] * resid[i];
      grad[j] = float(gj / m);
    }
    if (hetcclAllReduce(grad.data(), grad.data(), d, hetcclFloat32, hetcclAvg, comm) != hetcclSuccess) return -1;
    // Step decay (same for both runs): error feedback with a constant step
    // settles in an O(step) neighbourhood of the optimum.
    float lr = s < steps / 3 ? 0.2f : s < 2 * steps / 3 ? 0.05f : 0.01f;
    for (int j = 0; j < d; ++j) x[j] -= lr * grad[j];
  }
  if (xOut) *xOut = x;
  return loss;
}

TEST(Compression, TopKWithErrorFeedbackReachesUncompressedLoss) {
  auto r = runRanks(4, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = init(rank, n, id);
    RCHECK(comm, "init");
    const int steps = 900;
    double plain = train(comm, rank, n, false, 0, steps, nullptr);
    double sparse = train(comm, rank, n, true, 0.1, steps, nullptr); // 7 of 64 entries per rank and step
    double start = train(comm, rank, n, false, 0, 0, nullptr);
    if (rank == 0)
      printf("least squares, 4 ranks, %d steps: initial loss %.6f, uncompressed %.6f, top-k 10%% with error feedback %.6f "
             "(%.3f%% apart)\n", steps, start, plain, sparse, 100.0 * std::fabs(sparse - plain) / plain);
    RCHECK(plain > 0 && sparse > 0, "training failed");
    RCHECK(std::fabs(sparse - plain) <= 0.01 * plain, "top-k loss %.6f vs %.6f", sparse, plain);
    RCHECK(plain < 0.01 * start, "uncompressed run did not converge");
    RCALL(hetcclCommDestroy(comm));
    return 0;
  }, 240);
  EXPECT_TRUE(allOk(r));
}

TEST(Compression, TopKKeepsWhatItDidNotSendInTheResidual) {
  // One rank: the all-reduce is the identity on what is sent, so after one
  // call the output holds exactly the k largest entries, and after enough
  // calls with zero gradient everything has been delivered.
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclComm_t comm = init(rank, n, id);
    RCHECK(comm, "init");
    RCALL(hetcclCommSetCompression(comm, hetcclCompressTopK, 0.25));
    std::vector<float> g = {8, -1, 2, 0.5f, -7, 3, 0, 1};
    std::vector<float> buf(g);
    RCALL(hetcclAllReduce(buf.data(), buf.data(), buf.size(), hetcclFloat32, hetcclSum, comm));
    std::vector<float> want = {16, 0, 0, 0, -14, 0, 0, 0}; // both ranks send 8 and -7
    RCHECK(buf == want, "first step sent the wrong entries");
    double delivered = 16 - 14;
    for (int s = 0; s < 4; ++s) {
      std::vector<float> z(8, 0.0f);
      // Error feedback is keyed by buffer: reuse `buf`.
      memcpy(buf.data(), z.data(), 32);
      RCALL(hetcclAllReduce(buf.data(), buf.data(), buf.size(), hetcclFloat32, hetcclSum, comm));
      for (float v : buf) delivered += v;
    }
    double total = 0;
    for (float v : g) total += 2 * v;
    RCHECK(std::fabs(delivered - total) < 1e-5, "delivered %.3f of %.3f", delivered, total);
    RCALL(hetcclCommDestroy(comm));
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Compression, HalfConversionsRoundToNearestEven) {
  using namespace hetccl;
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // rounds to inf
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00); // tie -> even
  EXPECT_EQ(floatToHalf(5.9604645e-08f), 0x0001);   // smallest subnormal
  EXPECT_EQ(halfToFloat(0x0001), 5.9604645e-08f);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.00390625f), 0x3f80); // tie -> even
  EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
  for (int i = -2048; i <= 2048; ++i) EXPECT_EQ(halfToFloat(floatToHalf(float(i))), float(i));
}

} // namespace
