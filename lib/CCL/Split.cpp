// hetcclCommSplit: sub-communicators of an existing one.
//
// 1. All-gather {color, key, ok} over the parent (ring, exact; every rank of
//    the parent takes part, NOCOLOR ones too). `ok` = 0 says this rank's
//    arguments were invalid: then every rank fails with
//    hetcclInvalidArgument and the parent stays usable.
// 2. The members of a color, sorted by (key, parent rank), are the new
//    ranks 0..k-1. New rank 0 is the leader: it listens on a free port of
//    its own data address (never HETCCL_ROOT / MASTER_ADDR: those belong to
//    the parent) and makes a fresh id there (random token, random job id ≠
//    the parent's, so shm names do not collide).
// 3. The leader sends the id to its members only, over the parent's
//    authenticated links, so the new token is never seen outside the color.
// 4. Everyone runs the normal init (rendezvous, shm, TCP, vendor) under the
//    new communicator's timeout; the parent's abort flag ends it early.
#include "Algorithms/Algorithms.h"
#include "Bootstrap/UniqueId.h"
#include "Comm.h"
#include "Common/Error.h"
#include "Common/Log.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace hetccl {

namespace {

struct SplitEntry {
  int32_t color;
  int32_t key;
  int32_t ok;
};

// The configuration a split communicator inherits when config is NULL: the
// parent's current settings, on the parent's data address.
hetcclConfig_t inheritedConfig(const hetcclComm* c) {
  hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
  cfg.deviceKind = c->kind;
  cfg.deviceIndex = c->deviceIndex;
  snprintf(cfg.host, sizeof cfg.host, "%s", c->host.c_str());
  snprintf(cfg.bindAddr, sizeof cfg.bindAddr, "%s", c->peers[c->rank].dataHost);
  cfg.timeoutMs = c->timeoutMs;
  cfg.algo = c->algo;
  cfg.compression = c->compression;
  cfg.topkRatio = c->topkRatio;
  return cfg;
}

// commInit names the log lines after the new rank; the process keeps its
// parent rank as its name.
struct LogRankRestore {
  int rank;
  ~LogRankRestore() { setLogRank(rank); }
};

} // namespace

hetcclComm* commSplit(hetcclComm* c, int color, int key, const hetcclConfig_t* config) {
  SplitEntry mine{color, key, 1};
  std::string why;
  hetcclConfig_t cfg{};
  try {
    if (color < 0 && color != HETCCL_SPLIT_NOCOLOR)
      fail(hetcclInvalidArgument, "color " + std::to_string(color) + " is negative (only HETCCL_SPLIT_NOCOLOR is allowed)");
    if (color != HETCCL_SPLIT_NOCOLOR) {
      cfg = config ? *config : inheritedConfig(c);
      checkConfig(&cfg);
    }
  } catch (const CclError& e) {
    if (e.result() != hetcclInvalidArgument) throw;
    mine.ok = 0;
    why = e.what();
  }

  int n = c->nranks;
  std::vector<SplitEntry> all(size_t(n), SplitEntry{0, 0, 0});
  all[size_t(c->rank)] = mine;
  ringAllGather(c, allMembers(c), reinterpret_cast<char*>(all.data()), size_t(n) * 3, sizeof(int32_t));
  if (!mine.ok) fail(hetcclInvalidArgument, "hetcclCommSplit: " + why);
  for (int r = 0; r < n; ++r)
    if (!all[size_t(r)].ok)
      fail(hetcclInvalidArgument, "hetcclCommSplit: rank " + std::to_string(r) + " passed an invalid argument");
  if (color == HETCCL_SPLIT_NOCOLOR) return nullptr;

  std::vector<int> members;
  for (int r = 0; r < n; ++r)
    if (all[size_t(r)].color == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[size_t(a)].key < all[size_t(b)].key; }); // ties: parent rank
  int newRank = int(std::find(members.begin(), members.end(), c->rank) - members.begin());
  int leader = members[0];

  InitOptions opts;
  opts.abortFlag = &c->aborted;
  hetcclUniqueId id;
  if (c->rank == leader) {
    SockAddr bound;
    opts.rootListen = listenOn(SockAddr{resolveIPv4(dataBindAddr(&cfg)), 0}, &bound);
    id = makeUniqueIdAt(bound, c->peers[size_t(c->rank)].jobId);
    std::vector<P2POp> ops;
    for (size_t i = 1; i < members.size(); ++i) ops.push_back(P2POp::sendTo(members[i], &id, sizeof id));
    c->fabric.run(ops);
  } else {
    c->fabric.run({P2POp::recvFrom(leader, &id, sizeof id)});
  }
  logDebug("split: color %d key %d -> rank %d of %zu (leader: parent rank %d)", color, key, newRank, members.size(),
           leader);
  LogRankRestore restore{c->rank};
  return commInit(int(members.size()), id, newRank, &cfg, &opts);
}

} // namespace hetccl
