// hetccl-bench: nccl-tests-style performance and correctness runs.
//
//   hetccl-bench -np 4 -b 4K -e 64M -f 2 -n 20 -w 5 -c 1 -A ring -Z none
//
// With -np N it forks N local ranks itself. Without -np it is one rank of a
// job launched elsewhere (het-run, torchrun, mpirun): RANK/WORLD_SIZE (or
// OMPI_COMM_WORLD_RANK/SIZE), HETCCL_ROOT or MASTER_ADDR/MASTER_PORT, and
// HETCCL_TOKEN come from the environment. Columns follow nccl-tests:
// size, count, type, redop, root, time, algbw, busbw, #wrong; the exit code
// is non-zero if any value was wrong or any call failed.
//
// -D cuda:0 (or hip:0,2, cuda:all) puts those ranks' buffers in device
// memory: hetccl stages them through host memory beside host ranks, or
// hands the call to NCCL/RCCL when every rank is on one vendor's devices.
#include "Sizes.h" // bench/ccl: all-to-all-v's uneven blocks, as hetccl-compare times them
#include "VendorMemory.h"

#include "het-c/hetccl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using hetcclbench::VendorMemory;

enum Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, AllToAllV };

struct Opts {
  int np = 0;
  size_t minBytes = 32 << 20, maxBytes = 32 << 20;
  double factor = 2;
  int iters = 20, warmup = 5, check = 1;
  hetcclRedOp_t op = hetcclSum;
  hetcclDataType_t dt = hetcclFloat32;
  hetcclAlgo_t algo = hetcclAlgoAuto;
  hetcclCompression_t z = hetcclCompressNone;
  double topk = 0.01;
  std::string zName = "none";
  Coll coll = AllReduce;
  int root = 0;
  int64_t timeoutMs = 0;
  // -D: whose buffers are device memory, and of which kind.
  hetcclDeviceKind_t deviceKind = hetcclDeviceCpu;
  std::vector<int> deviceRanks; // empty with a device kind: every rank
  std::string deviceSpec = "host";
};

[[noreturn]] void usage(const char* msg) {
  fprintf(stderr,
          "hetccl-bench: %s\n"
          "usage: hetccl-bench [-np N] [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP] [-c 0|1]\n"
          "                    [-o sum|prod|min|max|avg] [-d float|double|half|bf16|int8|uint8|int32|int64]\n"
          "                    [-A ring|tree|halving_doubling|hierarchical|ps|auto] [-Z none|fp16|bf16|int8|topk:RATIO]\n"
          "                    [-C allreduce|allgather|reducescatter|broadcast|reduce|alltoall|alltoallv] [-r ROOT] [-T TIMEOUT_MS]\n"
          "                    [-D cuda:RANKS|hip:RANKS]  (RANKS: 0,2 or all: their buffers in device memory)\n",
          msg);
  exit(2);
}

size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = strtod(s, &end);
  if (end == s || v < 0) usage((std::string("bad size '") + s + "'").c_str());
  std::string suf(end);
  double mul = 1;
  if (suf == "K" || suf == "k") mul = 1024;
  else if (suf == "M" || suf == "m") mul = 1 << 20;
  else if (suf == "G" || suf == "g") mul = 1 << 30;
  else if (!suf.empty()) usage((std::string("bad size suffix in '") + s + "'").c_str());
  return size_t(v * mul);
}

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "-np") o.np = atoi(val());
    else if (a == "-b") o.minBytes = parseSize(val());
    else if (a == "-e") o.maxBytes = parseSize(val());
    else if (a == "-f") o.factor = atof(val());
    else if (a == "-n") o.iters = atoi(val());
    else if (a == "-w") o.warmup = atoi(val());
    else if (a == "-c") o.check = atoi(val());
    else if (a == "-r") o.root = atoi(val());
    else if (a == "-T") o.timeoutMs = atoll(val());
    else if (a == "-o") {
      std::string v = val();
      const char* names[] = {"sum", "prod", "min", "max", "avg"};
      int k = -1;
      for (int j = 0; j < 5; ++j)
        if (v == names[j]) k = j;
      if (k < 0) usage(("unknown op '" + v + "'").c_str());
      o.op = hetcclRedOp_t(k);
    } else if (a == "-d") {
      std::string v = val();
      const char* names[][2] = {{"float", "f32"}, {"double", "f64"}, {"half", "f16"}, {"bf16", "bfloat16"},
                                {"int8", "i8"},   {"uint8", "u8"},   {"int32", "i32"}, {"int64", "i64"}};
      int k = -1;
      for (int j = 0; j < 8; ++j)
        if (v == names[j][0] || v == names[j][1]) k = j;
      if (k < 0) usage(("unknown type '" + v + "'").c_str());
      o.dt = hetcclDataType_t(k);
    } else if (a == "-A") {
      if (hetcclAlgoFromName(val(), &o.algo) != hetcclSuccess) usage(hetcclGetLastError(nullptr));
    } else if (a == "-Z") {
      std::string v = val();
      o.zName = v;
      if (v == "none") o.z = hetcclCompressNone;
      else if (v == "fp16") o.z = hetcclCompressFp16;
      else if (v == "bf16") o.z = hetcclCompressBf16;
      else if (v == "int8") o.z = hetcclCompressInt8;
      else if (v.rfind("topk:", 0) == 0) {
        o.z = hetcclCompressTopK;
        o.topk = atof(v.c_str() + 5);
        if (!(o.topk > 0 && o.topk <= 1)) usage("top-k ratio must be in (0, 1]");
      } else usage(("unknown compression '" + v + "'").c_str());
    } else if (a == "-C") {
      std::string v = val();
      const char* names[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
                             "alltoallv"};
      int k = -1;
      for (int j = 0; j < 7; ++j)
        if (v == names[j]) k = j;
      if (k < 0) usage(("unknown collective '" + v + "'").c_str());
      o.coll = Coll(k);
    } else if (a == "-D") {
      std::string v = val();
      size_t colon = v.find(':');
      std::string kind = v.substr(0, colon);
      if (kind == "cuda") o.deviceKind = hetcclDeviceCuda;
      else if (kind == "hip") o.deviceKind = hetcclDeviceHip;
      else usage(("-D expects cuda:RANKS or hip:RANKS, got '" + v + "'").c_str());
      std::string ranks = colon == std::string::npos ? "all" : v.substr(colon + 1);
      if (ranks != "all") {
        for (size_t at = 0; at <= ranks.size();) {
          size_t comma = std::min(ranks.find(',', at), ranks.size());
          std::string item = ranks.substr(at, comma - at);
          char* end = nullptr;
          long r = strtol(item.c_str(), &end, 10);
          if (item.empty() || *end || r < 0) usage(("-D: bad rank '" + item + "' in '" + v + "'").c_str());
          o.deviceRanks.push_back(int(r));
          at = comma + 1;
        }
      }
      o.deviceSpec = kind + " on ranks " + ranks;
    } else if (a == "-h" || a == "--help") usage("help");
    else usage(("unknown flag '" + a + "'").c_str());
  }
  if (o.minBytes > o.maxBytes) usage("-b is larger than -e");
  if (o.factor <= 1) usage("-f must be > 1");
  if (o.iters < 1 || o.warmup < 0) usage("-n must be >= 1 and -w >= 0");
  return o;
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

size_t typeSize(hetcclDataType_t t) {
  static const size_t s[] = {4, 8, 2, 2, 1, 1, 4, 8};
  return s[t];
}

uint16_t toHalf(float f, bool bf) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if (bf) return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
  // Small integers only: exact in fp16.
  int v = int(f);
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  v = std::abs(v);
  int e = 0;
  while ((v >> e) > 1) ++e;
  uint16_t mant = uint16_t(((v << 10) >> e) & 0x3ff);
  return uint16_t(sign | uint16_t(e + 15) << 10 | mant);
}

void store(hetcclDataType_t t, void* b, size_t i, double v) {
  switch (t) {
  case hetcclFloat32: static_cast<float*>(b)[i] = float(v); break;
  case hetcclFloat64: static_cast<double*>(b)[i] = v; break;
  case hetcclFloat16: static_cast<uint16_t*>(b)[i] = toHalf(float(v), false); break;
  case hetcclBfloat16: static_cast<uint16_t*>(b)[i] = toHalf(float(v), true); break;
  case hetcclInt8: static_cast<int8_t*>(b)[i] = int8_t(int(v)); break;
  case hetcclUint8: static_cast<uint8_t*>(b)[i] = uint8_t(int(v)); break;
  case hetcclInt32: static_cast<int32_t*>(b)[i] = int32_t(v); break;
  case hetcclInt64: static_cast<int64_t*>(b)[i] = int64_t(v); break;
  default: break;
  }
}

double load(hetcclDataType_t t, const void* b, size_t i) {
  switch (t) {
  case hetcclFloat32: return static_cast<const float*>(b)[i];
  case hetcclFloat64: return static_cast<const double*>(b)[i];
  case hetcclFloat16: {
    uint16_t h = static_cast<const uint16_t*>(b)[i];
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
  }
  case hetcclBfloat16: {
    uint32_t x = uint32_t(static_cast<const uint16_t*>(b)[i]) << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  case hetcclInt8: return static_cast<const int8_t*>(b)[i];
  case hetcclUint8: return static_cast<const uint8_t*>(b)[i];
  case hetcclInt32: return static_cast<const int32_t*>(b)[i];
  case hetcclInt64: return double(static_cast<const int64_t*>(b)[i]);
  default: return 0;
  }
}

// Inputs whose reduction is exact in every type: small integers (1..3, or
// 1..2 for products so 2^8 stays exact).
double gen(const Opts& o, int rank, size_t i) {
  if (o.op == hetcclProd) return (rank + i) % 4 == 0 ? 2 : 1;
  return double((rank * 7 + i * 3) % 3 + 1);
}

double expectAt(const Opts& o, int n, size_t i) {
  double acc = gen(o, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = gen(o, r, i);
    if (o.op == hetcclSum || o.op == hetcclAvg) acc += v;
    else if (o.op == hetcclProd) acc *= v;
    else if (o.op == hetcclMin) acc = std::min(acc, v);
    else acc = std::max(acc, v);
  }
  if (o.op == hetcclAvg) {
    if (o.dt >= hetcclInt8) acc = std::trunc(acc / n);
    else acc /= n;
  }
  return acc;
}

struct Buffers {
  std::vector<char> send, recv; // host memory: filled and checked here
  // This rank's device copies under -D (null otherwise): what the calls get.
  char* deviceSend = nullptr;
  char* deviceRecv = nullptr;
  size_t count;      // elements per rank argument of the call
  size_t sendCount;  // elements in send
  size_t recvCount;  // elements in recv
  // AllToAllV: the uneven blocks (cclbench::alltoallvCount), in elements.
  std::vector<size_t> sendCounts, sendOffsets, recvCounts, recvOffsets;
};

// Block `k` of an all-to-all-v buffer that element i falls in, and i's
// place in it.
std::pair<int, size_t> blockOf(const std::vector<size_t>& counts, const std::vector<size_t>& offsets, size_t i) {
  for (size_t k = 0; k < counts.size(); ++k)
    if (i >= offsets[k] && i < offsets[k] + counts[k]) return {int(k), i - offsets[k]};
  return {-1, 0};
}

Buffers sizeBuffers(const Opts& o, size_t bytes, int rank, int n) {
  Buffers b;
  size_t es = typeSize(o.dt), total = bytes / es;
  switch (o.coll) {
  case AllReduce:
  case Broadcast:
  case Reduce: b.count = b.sendCount = b.recvCount = total; break;
  case AllGather: b.count = total / n; b.sendCount = b.count; b.recvCount = b.count * n; break;
  case ReduceScatter: b.count = total / n; b.sendCount = b.count * n; b.recvCount = b.count; break;
  case AllToAll: b.count = total / n; b.sendCount = b.recvCount = b.count * n; break;
  case AllToAllV: {
    // AllToAllVBlocks counts 4-byte elements: scale to this type's.
    cclbench::AllToAllVBlocks<size_t> k(total * 4, rank, n);
    b.sendCounts = k.sendCounts;
    b.sendOffsets = k.sendOffsets;
    b.recvCounts = k.recvCounts;
    b.recvOffsets = k.recvOffsets;
    b.count = b.sendCount = k.sent; // (count: what the table's count column shows)
    b.recvCount = k.received;
    break;
  }
  }
  b.send.resize(b.sendCount * es + 1);
  b.recv.resize(b.recvCount * es + 1);
  return b;
}

hetcclResult_t call(const Opts& o, Buffers& b, hetcclComm_t c) {
  char* send = b.deviceSend ? b.deviceSend : b.send.data();
  char* recv = b.deviceRecv ? b.deviceRecv : b.recv.data();
  switch (o.coll) {
  case AllReduce: return hetcclAllReduce(send, recv, b.count, o.dt, o.op, c);
  case AllGather: return hetcclAllGather(send, recv, b.count, o.dt, c);
  case ReduceScatter: return hetcclReduceScatter(send, recv, b.count, o.dt, o.op, c);
  case Broadcast: return hetcclBroadcast(send, recv, b.count, o.dt, o.root, c);
  case Reduce: return hetcclReduce(send, recv, b.count, o.dt, o.op, o.root, c);
  case AllToAll: return hetcclAllToAll(send, recv, b.count, o.dt, c);
  case AllToAllV:
    return hetcclAllToAllV(send, b.sendCounts.data(), b.sendOffsets.data(), recv, b.recvCounts.data(),
                           b.recvOffsets.data(), o.dt, c);
  }
  return hetcclInvalidArgument;
}

double busFactor(const Opts& o, int n) {
  switch (o.coll) {
  case AllReduce: return 2.0 * (n - 1) / n;
  case AllGather:
  case ReduceScatter:
  case AllToAll:
  case AllToAllV: return double(n - 1) / n;
  default: return 1.0;
  }
}

// Fills inputs and counts wrong outputs on this rank.
void fill(const Opts& o, Buffers& b, int rank, int n) {
  size_t per = o.coll == AllToAll ? b.count : 0;
  for (size_t i = 0; i < b.sendCount; ++i) {
    double v;
    if (o.coll == AllGather || o.coll == Broadcast) v = double((rank * 31 + i) % 100);
    else if (o.coll == AllToAll) v = double((rank * 8 + i / per + i % per) % 100);
    else if (o.coll == AllToAllV) {
      auto [q, at] = blockOf(b.sendCounts, b.sendOffsets, i);
      v = double((rank * 8 + q + at) % 100);
    } else v = gen(o, rank, i);
    store(o.dt, b.send.data(), i, v);
  }
  (void)n;
}

long countWrong(const Opts& o, const Buffers& b, int rank, int n) {
  if (o.z == hetcclCompressTopK) return 0; // sparsified: no exact answer
  // Lossy codecs: inputs are small integers, partial sums <= 3n; each of
  // the n encodings on a value's path adds at most 3n * relErr.
  double tol = 0;
  if (o.z == hetcclCompressInt8) tol = 3.0 * n * n / 254;
  if (o.z == hetcclCompressFp16) tol = 3.0 * n * n / 2048;
  if (o.z == hetcclCompressBf16) tol = 3.0 * n * n / 256;
  if (o.z != hetcclCompressNone && o.op == hetcclAvg) tol /= n;
  long wrong = 0;
  size_t per = o.coll == AllToAll ? b.count : 0;
  for (size_t i = 0; i < b.recvCount; ++i) {
    double want;
    switch (o.coll) {
    case AllReduce: want = expectAt(o, n, i); break;
    case ReduceScatter: want = expectAt(o, n, i + size_t(rank) * b.count); break;
    case Reduce:
      if (rank != o.root) return 0;
      want = expectAt(o, n, i);
      break;
    case AllGather: want = double(((i / b.count) * 31 + i % b.count) % 100); break;
    case Broadcast: want = double((o.root * 31 + i) % 100); break;
    case AllToAll: want = double(((i / per) * 8 + rank + i % per) % 100); break;
    case AllToAllV: {
      auto [r, at] = blockOf(b.recvCounts, b.recvOffsets, i);
      want = double((r * 8 + rank + at) % 100);
      break;
    }
    default: want = 0;
    }
    double got = load(o.dt, b.recv.data(), i);
    // Non-f32 types and non-sum ops are never compressed (see docs).
    bool lossy = o.z != hetcclCompressNone && o.dt == hetcclFloat32 && o.coll == AllReduce &&
                 (o.op == hetcclSum || o.op == hetcclAvg);
    bool ok = lossy ? std::fabs(got - want) <= tol : got == want;
    if (o.dt == hetcclFloat16 && o.op == hetcclAvg && !lossy) ok = std::fabs(got - want) <= std::fabs(want) / 1024;
    if (o.dt == hetcclBfloat16 && o.op == hetcclAvg && !lossy) ok = std::fabs(got - want) <= std::fabs(want) / 128;
    if (!ok) ++wrong;
  }
  return wrong;
}

bool onDevice(const Opts& o, int rank) {
  if (o.deviceKind == hetcclDeviceCpu) return false;
  return o.deviceRanks.empty() ||
         std::find(o.deviceRanks.begin(), o.deviceRanks.end(), rank) != o.deviceRanks.end();
}

// The device a device rank uses: device ranks take this machine's devices
// in turn (several ranks may share one: hetccl then stages through host
// memory; NCCL refuses two ranks on one GPU).
int deviceIndex(const Opts& o, int rank) {
  int count = 0;
  if (hetcclDeviceCount(o.deviceKind, &count) != hetcclSuccess || count <= 0) return -1;
  int position = o.deviceRanks.empty()
                     ? rank
                     : int(std::find(o.deviceRanks.begin(), o.deviceRanks.end(), rank) - o.deviceRanks.begin());
  return position % count;
}

// Host -> device copies of this rank's buffers under -D; recv gets the
// host recv's bytes too (the poison before a checked call).
bool toDevice(Buffers& b, VendorMemory& memory, std::string* why) {
  if (!b.deviceSend && (!memory.alloc(reinterpret_cast<void**>(&b.deviceSend), b.send.size(), why) ||
                        !memory.alloc(reinterpret_cast<void**>(&b.deviceRecv), b.recv.size(), why)))
    return false;
  return memory.copy(b.deviceSend, b.send.data(), b.send.size(), why) &&
         memory.copy(b.deviceRecv, b.recv.data(), b.recv.size(), why);
}

int runRank(const Opts& o, hetcclComm_t comm, int rank, int n) {
  VendorMemory memory;
  bool device = onDevice(o, rank);
  std::string why;
  if (device && !memory.open(o.deviceKind, std::max(0, deviceIndex(o, rank)), &why)) {
    fprintf(stderr, "hetccl-bench rank %d: -D %s: %s\n", rank, o.deviceSpec.c_str(), why.c_str());
    hetcclCommAbort(comm);
    return 1;
  }
  if (o.algo != hetcclAlgoAuto) hetcclCommSetAlgorithm(comm, o.algo);
  if (o.z != hetcclCompressNone) {
    if (hetcclCommSetCompression(comm, o.z, o.topk) != hetcclSuccess) {
      fprintf(stderr, "hetccl-bench: %s\n", hetcclGetLastError(comm));
      return 1;
    }
  }
  const char* opNames[] = {"sum", "prod", "min", "max", "avg"};
  const char* typeNames[] = {"float", "double", "half", "bfloat16", "int8", "uint8", "int32", "int64"};
  const char* collNames[] = {"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
                             "alltoallv"};
  if (rank == 0) {
    printf("# hetccl-bench %s: nranks %d, algorithm %s, compression %s, iters %d, warmup %d, check %d, buffers %s\n",
           collNames[o.coll], n, hetcclAlgoName(o.algo), o.zName.c_str(), o.iters, o.warmup, o.check,
           o.deviceSpec.c_str());
    printf("#\n# %10s %12s %8s %6s %6s %10s %9s %9s %8s  %s\n", "size", "count", "type", "redop", "root", "time(us)",
           "algbw", "busbw", "#wrong", "algo");
    printf("# %10s %12s %8s %6s %6s %10s %9s %9s %8s\n", "(B)", "(elements)", "", "", "", "", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
  }
  double busSum = 0;
  int points = 0;
  long totalWrong = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    Buffers b = sizeBuffers(o, bytes, rank, n);
    fill(o, b, rank, n);
    if (device && !toDevice(b, memory, &why)) goto deviceFail;
    for (int i = 0; i < o.warmup; ++i)
      if (call(o, b, comm) != hetcclSuccess) goto fail;
    {
      if (hetcclBarrier(comm) != hetcclSuccess) goto fail;
      double t0 = now();
      for (int i = 0; i < o.iters; ++i)
        if (call(o, b, comm) != hetcclSuccess) goto fail;
      double t = (now() - t0) / o.iters;
      // The slowest rank defines the time, as in nccl-tests.
      if (hetcclAllReduce(&t, &t, 1, hetcclFloat64, hetcclMax, comm) != hetcclSuccess) goto fail;
      long wrong = 0;
      if (o.check) {
        fill(o, b, rank, n);
        std::fill(b.recv.begin(), b.recv.end(), char(0x5a));
        if (device && !toDevice(b, memory, &why)) goto deviceFail;
        if (call(o, b, comm) != hetcclSuccess) goto fail;
        if (device && !memory.copy(b.recv.data(), b.deviceRecv, b.recv.size(), &why)) goto deviceFail;
        int64_t w = countWrong(o, b, rank, n);
        if (hetcclAllReduce(&w, &w, 1, hetcclInt64, hetcclSum, comm) != hetcclSuccess) goto fail;
        wrong = long(w);
      }
      size_t es = typeSize(o.dt);
      size_t dataBytes = o.coll == AllToAllV ? b.sendCount * es
                         : (o.coll == AllGather || o.coll == ReduceScatter || o.coll == AllToAll) ? b.count * es * n
                                                                                                  : b.count * es;
      double algbw = t > 0 ? double(dataBytes) / t / 1e9 : 0;
      double busbw = algbw * busFactor(o, n);
      busSum += busbw;
      ++points;
      totalWrong += wrong;
      if (rank == 0) {
        bool rooted = o.coll == Broadcast || o.coll == Reduce;
        char wbuf[32];
        if (!o.check) snprintf(wbuf, sizeof wbuf, "N/A");
        else if (o.z == hetcclCompressTopK) snprintf(wbuf, sizeof wbuf, "n/a");
        else snprintf(wbuf, sizeof wbuf, "%ld", wrong);
        // The all-reduce algorithm that ran (auto's pick: the tuning
        // database's, one-shot or the cost table's); "-" for the others.
        hetcclAlgo_t ran = hetcclAlgoAuto;
        if (o.coll == AllReduce) hetcclCommPickAlgorithm(comm, dataBytes, &ran);
        printf("  %10zu %12zu %8s %6s %6d %10.1f %9.3f %9.3f %8s  %s\n", dataBytes, b.count, typeNames[o.dt],
               (o.coll == AllGather || o.coll == Broadcast || o.coll == AllToAll || o.coll == AllToAllV)
                   ? "none"
                   : opNames[o.op],
               rooted ? o.root : -1, t * 1e6, algbw, busbw, wbuf, o.coll == AllReduce ? hetcclAlgoName(ran) : "-");
        fflush(stdout);
      }
    }
    memory.release(b.deviceSend);
    memory.release(b.deviceRecv);
    {
      size_t next = size_t(double(bytes) * o.factor);
      if (next <= bytes) next = bytes + 1;
      bytes = next;
    }
    continue;
  fail:
    fprintf(stderr, "hetccl-bench rank %d: %s\n", rank, hetcclGetLastError(comm));
    hetcclCommAbort(comm);
    return 1;
  deviceFail:
    fprintf(stderr, "hetccl-bench rank %d: -D %s: %s\n", rank, o.deviceSpec.c_str(), why.c_str());
    hetcclCommAbort(comm);
    return 1;
  }
  if (rank == 0) {
    printf("# Out of bounds values : %ld %s\n", totalWrong, totalWrong ? "ERROR" : "OK");
    printf("# Avg bus bandwidth    : %.4f\n#\n", points ? busSum / points : 0.0);
    fflush(stdout);
  }
  hetcclCommDestroy(comm);
  return totalWrong ? 1 : 0;
}

hetcclConfig_t config(const Opts& o, int rank) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.timeoutMs = o.timeoutMs;
  if (onDevice(o, rank)) {
    cfg.deviceKind = o.deviceKind;
    cfg.deviceIndex = deviceIndex(o, rank);
  }
  return cfg;
}

// A rank launched elsewhere knows its rank from the environment only.
int rankFromEnvironment() {
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK"})
    if (const char* v = getenv(name)) return atoi(v);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  Opts o = parse(argc, argv);
  if (o.np > 0) {
    if (o.np > 1024) usage("-np is too large");
    hetcclUniqueId id;
    if (hetcclGetUniqueId(&id) != hetcclSuccess) {
      fprintf(stderr, "hetccl-bench: %s\n", hetcclGetLastError(nullptr));
      return 1;
    }
    if (o.root < 0 || o.root >= o.np) usage("-r is out of range");
    fflush(stdout);
    std::vector<pid_t> pids;
    for (int r = 0; r < o.np; ++r) {
      pid_t p = fork();
      if (p == 0) {
        hetcclConfig_t cfg = config(o, r);
        hetcclComm_t comm;
        if (hetcclCommInitRank(&comm, o.np, id, r, &cfg) != hetcclSuccess) {
          fprintf(stderr, "hetccl-bench rank %d: init: %s\n", r, hetcclGetLastError(nullptr));
          _exit(1);
        }
        int rc = runRank(o, comm, r, o.np);
        fflush(stdout);
        _exit(rc);
      }
      pids.push_back(p);
    }
    int worst = 0;
    for (pid_t p : pids) {
      int st = 0;
      waitpid(p, &st, 0);
      int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      worst = std::max(worst, rc);
    }
    return worst;
  }
  hetcclConfig_t cfg = config(o, rankFromEnvironment());
  hetcclComm_t comm;
  if (hetcclCommInitFromEnv(&comm, &cfg) != hetcclSuccess) {
    fprintf(stderr, "hetccl-bench: init from environment: %s\n(use -np N to launch local ranks)\n",
            hetcclGetLastError(nullptr));
    return 1;
  }
  int rank, n;
  hetcclCommUserRank(comm, &rank);
  hetcclCommCount(comm, &n);
  if (o.root < 0 || o.root >= n) usage("-r is out of range");
  return runRank(o, comm, rank, n);
}
