#include "Comm.h"

#include "Auth/Hmac.h"
#include "Bootstrap/InheritedListener.h"
#include "Common/Error.h"
#include "Common/Log.h"
#include "Algorithms/Algorithms.h"
#include "Net/Frame.h"
#include "Device/VendorCcl.h"
#include "Transport/ShmBoard.h"
#include "Transport/Tcp.h"

#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unistd.h>

namespace hetccl {

static std::string envStr(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

static int64_t envInt(const char* name, int64_t dflt) {
  std::string v = envStr(name);
  if (v.empty()) return dflt;
  char* end = nullptr;
  long long x = strtoll(v.c_str(), &end, 10);
  if (*end != '\0' || x < 0) fail(hetcclInvalidArgument, std::string(name) + "='" + v + "' is not a non-negative integer");
  return x;
}

hetcclCompression_t parseCompression(const std::string& s, double* ratio);

static void resolveConfig(hetcclComm* c, const hetcclConfig_t* cfg) {
  hetcclConfig_t d = HETCCL_CONFIG_INITIALIZER;
  if (!cfg) cfg = &d;
  if (cfg->size != sizeof(hetcclConfig_t))
    fail(hetcclInvalidArgument, "config.size is " + std::to_string(cfg->size) + ", expected " +
                                    std::to_string(sizeof(hetcclConfig_t)) + " (use HETCCL_CONFIG_INITIALIZER)");
  if (cfg->deviceKind < 0 || cfg->deviceKind >= hetcclNumDeviceKinds)
    fail(hetcclInvalidArgument, "config.deviceKind " + std::to_string(cfg->deviceKind) + " is not a device kind");
  if (memchr(cfg->host, 0, sizeof cfg->host) == nullptr || memchr(cfg->bindAddr, 0, sizeof cfg->bindAddr) == nullptr)
    fail(hetcclInvalidArgument, "config.host / config.bindAddr is not NUL-terminated");
  c->kind = cfg->deviceKind;
  c->deviceIndex = cfg->deviceIndex;
  c->host = cfg->host;
  if (c->host.empty()) c->host = envStr("HETCCL_HOST");
  if (c->host.empty()) {
    char h[64] = {};
    gethostname(h, sizeof h - 1);
    c->host = h;
  }
  if (c->host.size() >= 64) fail(hetcclInvalidArgument, "host name longer than 63 characters");
  c->timeoutMs = cfg->timeoutMs > 0 ? cfg->timeoutMs : envInt("HETCCL_TIMEOUT_MS", 300000);
  if (c->timeoutMs <= 0) fail(hetcclInvalidArgument, "timeout must be positive");
  c->algo = cfg->algo;
  if (c->algo < 0 || c->algo >= hetcclNumAlgos) fail(hetcclInvalidArgument, "config.algo is not an algorithm");
  std::string envAlgo = envStr("HETCCL_ALGO");
  if (c->algo == hetcclAlgoAuto && !envAlgo.empty()) {
    if (hetcclAlgoFromName(envAlgo.c_str(), &c->algo) != hetcclSuccess)
      fail(hetcclInvalidArgument,
           "HETCCL_ALGO='" + envAlgo + "' is not ring|tree|halving_doubling|hierarchical|ps|oneshot|twoshot|auto");
  }
  c->topkRatio = cfg->topkRatio > 0 ? cfg->topkRatio : 0.01;
  c->compression = cfg->compression;
  if (c->compression < 0 || c->compression >= hetcclNumCompressions)
    fail(hetcclInvalidArgument, "config.compression is not a compression");
  std::string envZ = envStr("HETCCL_COMPRESSION");
  if (c->compression == hetcclCompressNone && !envZ.empty()) {
    double r = c->topkRatio;
    c->compression = parseCompression(envZ, &r);
    c->topkRatio = r;
  }
  std::string envR = envStr("HETCCL_TOPK_RATIO");
  if (cfg->topkRatio <= 0 && !envR.empty()) c->topkRatio = atof(envR.c_str());
  if (!(c->topkRatio > 0 && c->topkRatio <= 1)) fail(hetcclInvalidArgument, "top-k ratio must be in (0, 1]");
}

hetcclCompression_t parseCompression(const std::string& s, double* ratio) {
  if (s == "none") return hetcclCompressNone;
  if (s == "fp16") return hetcclCompressFp16;
  if (s == "bf16") return hetcclCompressBf16;
  if (s == "int8") return hetcclCompressInt8;
  if (s.rfind("topk", 0) == 0) {
    if (s.size() > 5 && s[4] == ':') {
      char* end = nullptr;
      double r = strtod(s.c_str() + 5, &end);
      if (*end != '\0' || !(r > 0 && r <= 1)) fail(hetcclInvalidArgument, "bad top-k ratio in '" + s + "'");
      *ratio = r;
    } else if (s.size() != 4) {
      fail(hetcclInvalidArgument, "compression '" + s + "' is not none|fp16|bf16|int8|topk[:RATIO]");
    }
    return hetcclCompressTopK;
  }
  fail(hetcclInvalidArgument, "compression '" + s + "' is not none|fp16|bf16|int8|topk[:RATIO]");
}

static void buildTopology(hetcclComm* c) {
  std::map<std::pair<std::string, int>, int> gid;
  std::map<std::string, int> hid;
  c->groupOfRank.assign(c->nranks, 0);
  c->localIndex.assign(c->nranks, 0);
  for (int r = 0; r < c->nranks; ++r) {
    auto key = std::make_pair(std::string(c->peers[r].host), c->peers[r].kind);
    auto it = gid.find(key);
    if (it == gid.end()) {
      it = gid.emplace(key, int(c->groups.size())).first;
      c->groups.emplace_back();
    }
    c->groupOfRank[r] = it->second;
    c->localIndex[r] = int(c->groups[it->second].size());
    c->groups[it->second].push_back(r);
    auto h = hid.find(c->peers[r].host);
    if (h == hid.end()) {
      h = hid.emplace(c->peers[r].host, int(c->hostGroups.size())).first;
      c->hostGroups.emplace_back();
    }
    c->hostGroups[h->second].push_back(r);
  }
}

static std::string shmName(uint64_t jobId, int rank) {
  char b[64];
  snprintf(b, sizeof b, "/hetccl-%016" PRIx64 "-%d", jobId, rank);
  return b;
}

// Opens shm links to the ranks on this host (unless HETCCL_TRANSPORT=tcp).
static void setupShm(hetcclComm* c, const IdData& id, Rendezvous& rv, const std::vector<int>& local,
                     const Deadline& dl) {
  uint64_t ring = uint64_t(envInt("HETCCL_SHM_BYTES", 4 << 20));
  if (ring < 4096 || ring % 16 != 0) fail(hetcclInvalidArgument, "HETCCL_SHM_BYTES must be a multiple of 16, >= 4096");
  // The board of the one-shot and two-shot all-reduces and the one-shot
  // limit; every local rank must agree, as for the ring size (a mismatch is
  // a clear error when segments open, naming the variable).
  int64_t board = envInt("HETCCL_BOARD_BYTES", -1);
  if (board < -1 || board > (64 << 20))
    fail(hetcclInvalidArgument, "HETCCL_BOARD_BYTES must be between 0 (no board) and 64 MiB");
  int64_t oneShot = envInt("HETCCL_ONESHOT_BYTES", -1);
  if (oneShot < -1 || oneShot > (64 << 20))
    fail(hetcclInvalidArgument, "HETCCL_ONESHOT_BYTES must be between 0 (off) and 64 MiB");
  if (board >= 0 && oneShot > board)
    fail(hetcclInvalidArgument, "HETCCL_ONESHOT_BYTES (" + std::to_string(oneShot) +
                                    ") is larger than the board that holds its messages, HETCCL_BOARD_BYTES (" +
                                    std::to_string(board) + ")");
  if (board < 0) board = std::max<int64_t>(kDefaultBoardBytes, oneShot);
  if (oneShot < 0) oneShot = c->nranks == 2 ? kDefaultOneShotBytesTwoRanks : kDefaultOneShotBytes;
  // Only when every rank is on this host (then every local rank sees the
  // same, so the segments agree); else no board at all.
  bool allLocal = local.size() == size_t(c->nranks);
  c->boardBytes = allLocal ? uint64_t(board) : 0;
  c->oneShotLimit = allLocal ? std::min(uint64_t(oneShot), c->boardBytes) : 0;
  uint32_t nslots = uint32_t(local.size());
  auto localIdx = [&](int r) {
    for (size_t i = 0; i < local.size(); ++i)
      if (local[i] == r) return uint32_t(i);
    return uint32_t(0);
  };
  c->shm.push_back(
      ShmSegment::create(shmName(id.jobId, c->rank), c->rank, nslots, ring, c->boardBytes, c->oneShotLimit));
  rv.barrier(dl); // every segment exists
  std::vector<ShmSegment*> segOf(c->nranks, nullptr);
  segOf[c->rank] = c->shm[0].get();
  for (int r : local) {
    if (r == c->rank) continue;
    c->shm.push_back(ShmSegment::open(shmName(id.jobId, r), nslots, ring, c->boardBytes, c->oneShotLimit));
    segOf[r] = c->shm.back().get();
  }
  c->segOfRank = segOf;
  rv.barrier(dl); // every segment is mapped by everyone who needs it
  c->shm[0]->unlink(); // nothing is left in /dev/shm even if we crash later
  uint32_t me = localIdx(c->rank);
  for (int r : local) {
    if (r == c->rank) continue;
    c->fabric.links[r] = std::make_unique<ShmLink>(r, c->peers[r].pid, c->shm[0].get(), localIdx(r), segOf[r], me,
                                                   ring, c->rank);
  }
}

// Opens authenticated TCP links to remote ranks: each rank connects to the
// remote ranks below it, then accepts the ones above it.
static void setupTcp(hetcclComm* c, const IdData& id, Fd& listenFd, const std::vector<int>& remote,
                     const Deadline& dl, const std::atomic<bool>* abortFlag) {
  std::string token(reinterpret_cast<const char*>(id.token), sizeof id.token);
  int expectAccepts = 0;
  for (int r : remote) {
    if (r > c->rank) {
      ++expectAccepts;
      continue;
    }
    SockAddr a{c->peers[r].dataHost, c->peers[r].dataPort};
    Fd fd = connectRetry(a, dl, abortFlag);
    authClient(fd.get(), token, dl, abortFlag);
    int32_t hello[2] = {c->rank, int32_t(id.jobId & 0x7fffffff)};
    sendFrame(fd.get(), FrameType::DataHello, hello, sizeof hello, dl, abortFlag);
    c->fabric.links[r] = std::make_unique<TcpLink>(r, std::move(fd));
  }
  while (expectAccepts > 0) {
    std::string who;
    Fd fd = acceptUntil(listenFd.get(), dl, abortFlag, &who);
    if (!fd) {
      if (dl.passed()) fail(hetcclTimeout, "timed out waiting for TCP connections from remote ranks");
      continue;
    }
    Deadline hs{std::min(dl.atNs, nowNs() + int64_t(5000) * 1000000)};
    try {
      authServer(fd.get(), token, who, hs, abortFlag);
      std::vector<char> h = recvFrame(fd.get(), FrameType::DataHello, 8, hs, abortFlag);
      int32_t hello[2];
      if (h.size() != sizeof hello) fail(hetcclRemoteError, "malformed data hello");
      memcpy(hello, h.data(), sizeof hello);
      int r = hello[0];
      bool expected = false;
      for (int x : remote) expected |= x == r && r > c->rank;
      if (!expected || hello[1] != int32_t(id.jobId & 0x7fffffff) || c->fabric.links[r])
        fail(hetcclRemoteError, "unexpected data connection claiming rank " + std::to_string(r));
      c->fabric.links[r] = std::make_unique<TcpLink>(r, std::move(fd));
      --expectAccepts;
    } catch (const CclError& e) {
      if (e.result() == hetcclAborted) throw;
      if (e.result() != hetcclAuthError) logWarn("dropped data connection from %s: %s", who.c_str(), e.what());
    }
  }
}

// A communicator that is one vendor group (every rank cuda, or every rank
// hip, on any hosts) hands collectives to NCCL/RCCL. The group leader makes
// the vendor id; it travels over our authenticated bootstrap.
static void setupVendor(hetcclComm* c, Rendezvous& rv, const Deadline& dl) {
  bool oneKind = true;
  for (const auto& p : c->peers) oneKind &= p.kind == c->peers[0].kind;
  char want = 0;
  std::string why;
  if (c->device && oneKind) {
    c->device->vendor = VendorCcl::open(c->kind, &why);
    want = c->device->vendor ? 1 : 0;
    if (!want) logWarn("%s", why.c_str());
  }
  // All ranks must agree before anyone blocks in the vendor's init.
  auto votes = rv.allGather(std::vector<char>{want}, dl);
  bool all = true;
  for (auto& v : votes) all &= !v.empty() && v[0] == 1;
  if (!all) {
    if (c->device) c->device->vendor = nullptr;
    return;
  }
  std::string id = c->rank == 0 ? c->device->vendor->makeId() : std::string();
  auto ids = rv.allGather(std::vector<char>(id.begin(), id.end()), dl);
  c->device->vendor->initComm(c->nranks, std::string(ids[0].begin(), ids[0].end()), c->rank);
}

void checkConfig(const hetcclConfig_t* config) {
  hetcclComm scratch;
  resolveConfig(&scratch, config);
  resolveIPv4(dataBindAddr(config));
}

std::string dataBindAddr(const hetcclConfig_t* config) {
  std::string bind = config && config->bindAddr[0] ? config->bindAddr : envStr("HETCCL_BIND_ADDR");
  if (bind.empty()) bind = "127.0.0.1"; // loopback unless told otherwise
  return bind;
}

hetcclComm* commInit(int nranks, const hetcclUniqueId& uid, int rank, const hetcclConfig_t* config,
                     InitOptions* opts) {
  if (nranks < 1) fail(hetcclInvalidArgument, "nranks must be >= 1, got " + std::to_string(nranks));
  if (rank < 0 || rank >= nranks)
    fail(hetcclInvalidArgument, "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(nranks) + ")");
  IdData id = decodeId(uid);
  std::unique_ptr<hetcclComm> c(new hetcclComm);
  c->rank = rank;
  c->nranks = nranks;
  setLogRank(rank);
  resolveConfig(c.get(), config);
  if (c->kind == hetcclDeviceCuda || c->kind == hetcclDeviceHip) c->device = openDeviceRuntime(c->kind, c->deviceIndex);

  const std::atomic<bool>* abortFlag = opts && opts->abortFlag ? opts->abortFlag : &c->aborted;
  SockAddr bound;
  Fd dataListen = listenOn(SockAddr{resolveIPv4(dataBindAddr(config)), 0}, &bound);

  Deadline dl = Deadline::afterMs(c->timeoutMs);
  PeerInfo mine{};
  mine.rank = rank;
  mine.nranks = nranks;
  mine.pid = int32_t(getpid());
  mine.kind = c->kind;
  mine.jobId = id.jobId;
  snprintf(mine.host, sizeof mine.host, "%s", c->host.c_str());
  snprintf(mine.dataHost, sizeof mine.dataHost, "%s", bound.host.c_str());
  mine.dataPort = bound.port;

  Rendezvous rv(id, rank, nranks, abortFlag);
  if (opts && opts->rootListen) rv.adoptListener(std::move(opts->rootListen));
  else if (rank == 0)
    if (Fd inherited = takeInheritedRootListener(id)) rv.adoptListener(std::move(inherited));
  c->peers = rv.exchange(mine, dl);
  buildTopology(c.get());

  c->fabric.rank = rank;
  c->fabric.nranks = nranks;
  c->fabric.abortFlag = &c->aborted;
  c->fabric.timeoutMs = c->timeoutMs;
  c->fabric.links.resize(nranks);

  bool forceTcp = envStr("HETCCL_TRANSPORT") == "tcp";
  std::string transport = envStr("HETCCL_TRANSPORT");
  if (!transport.empty() && transport != "tcp" && transport != "auto")
    fail(hetcclInvalidArgument, "HETCCL_TRANSPORT='" + transport + "' is not auto|tcp");
  std::vector<int> local, remote;
  for (int r = 0; r < nranks; ++r) {
    bool sameHost = c->host == c->peers[r].host;
    if (r == rank || (sameHost && !forceTcp))
      local.push_back(r);
    else
      remote.push_back(r);
  }
  // Every rank must agree whether shm is in use, so the barriers inside
  // setupShm are entered by all ranks or none: decide by "anyone has a
  // local peer" through one all-gather.
  char wantShm = local.size() > 1 ? 1 : 0;
  auto votes = rv.allGather(std::vector<char>{wantShm}, dl);
  bool anyShm = false;
  for (auto& v : votes) anyShm |= !v.empty() && v[0];
  if (anyShm) {
    if (local.size() > 1)
      setupShm(c.get(), id, rv, local, dl);
    else {
      rv.barrier(dl);
      rv.barrier(dl);
    }
  }
  setupTcp(c.get(), id, dataListen, remote, dl, abortFlag);
  setupVendor(c.get(), rv, dl);
  loadTunedAllReduce(c.get(), rv, dl); // also the barrier: all links are up everywhere

  logDebug("rank %d/%d host %s kind %d: %zu shm peers, %zu tcp peers, %zu groups", rank, nranks, c->host.c_str(),
           int(c->kind), local.size() - 1, remote.size(), c->groups.size());
  return c.release();
}

} // namespace hetccl
