// The tuning database behind `auto` (HETCCL_TUNING_DB): `het-tune
// collectives` measures every all-reduce algorithm at a ladder of sizes on
// this host and records the fastest per size, keyed by the communicator's
// shape (ranks, nodes, link) and the host's CPU. At init rank 0 reads the
// records matching this communicator and sends them to every rank through
// the bootstrap, so that all ranks pick the same algorithm for a size even
// if their files differ. A call picks the record nearest its size (in
// log2 of bytes). No file, no matching record or an unusable file (damaged,
// locked, another schema: one warning naming it) leave `auto` as it was:
// one-shot below its crossover, then the cost table (Select.cpp).
#include "Algorithms/Algorithms.h"
#include "Common/Log.h"

#include "het/Tune/TuningDatabase.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace hetccl {

namespace {

// How this rank reaches its peers: all through shared memory, all through
// sockets, or both.
std::string linkSignature(const hetcclComm* c) {
  int shmPeers = 0;
  for (int r = 0; r < c->nranks; ++r)
    if (r != c->rank && r < int(c->segOfRank.size()) && c->segOfRank[r]) ++shmPeers;
  if (shmPeers == c->nranks - 1) return "shm";
  return shmPeers == 0 ? "tcp" : "mixed";
}

std::string deviceName(hetcclDeviceKind_t kind) {
  return kind == hetcclDeviceCuda ? "cuda" : kind == hetcclDeviceHip ? "hip" : "cpu";
}

} // namespace

std::string tuningKey(const hetcclComm* c) {
  return het::tune::allReduceWorkloadPrefix(c->nranks, int(c->hostGroups.size()), linkSignature(c));
}

void loadTunedAllReduce(hetcclComm* c, Rendezvous& rv, const Deadline& dl) {
  // Rank 0's table as text, "bytes algo" per line; empty: untuned.
  std::string table;
  const char* path = getenv("HETCCL_TUNING_DB");
  if (c->rank == 0 && path && *path) {
    try {
      auto db = het::tune::TuningDatabase::open(path, het::tune::TuningDatabase::Mode::ReadOnly, 1000);
      std::string prefix = tuningKey(c);
      for (const auto& r : db->find("collective", prefix, deviceName(c->kind), het::tune::hostIdentity(),
                                    het::tune::hetVersion())) {
        hetcclAlgo_t algo;
        if (hetcclAlgoFromName(r.choice.c_str(), &algo) != hetcclSuccess || algo == hetcclAlgoAuto) {
          logWarn("HETCCL_TUNING_DB=%s: record '%s' names no algorithm ('%s'); skipped", path, r.workload.c_str(),
                  r.choice.c_str());
          continue;
        }
        table += r.workload.substr(prefix.size()) + " " + std::to_string(int(algo)) + "\n";
      }
      if (table.empty())
        logDebug("HETCCL_TUNING_DB=%s has no all-reduce records for '%s...' on this host; auto uses the cost table",
                 path, prefix.c_str());
    } catch (const het::tune::DatabaseError& e) {
      logWarn("%s; all-reduce's auto uses the cost table", e.what());
      table.clear();
    }
  }
  auto tables = rv.allGather(std::vector<char>(table.begin(), table.end()), dl);
  std::istringstream in(std::string(tables[0].begin(), tables[0].end()));
  unsigned long long bytes;
  int algo;
  std::vector<std::pair<uint64_t, hetcclAlgo_t>> measured;
  while (in >> bytes >> algo) measured.push_back({uint64_t(bytes), hetcclAlgo_t(algo)});
  std::sort(measured.begin(), measured.end());
  // A call takes the record nearest in log2(bytes): record i serves sizes up
  // to the geometric mean of its size and the next one's, so that a call
  // compares integers and nothing more (a 4 KiB all-reduce takes 2 us).
  c->tunedAllReduce.clear();
  for (size_t i = 0; i < measured.size(); ++i) {
    uint64_t upTo = i + 1 < measured.size()
                        ? uint64_t(std::sqrt(double(measured[i].first) * double(measured[i + 1].first)))
                        : UINT64_MAX;
    c->tunedAllReduce.push_back({upTo, measured[i].second});
  }
}

hetcclAlgo_t allReduceAlgorithm(const hetcclComm* c, size_t bytes) {
  hetcclAlgo_t a = c->algo;
  if (a == hetcclAlgoAuto)
    for (const auto& [upTo, algo] : c->tunedAllReduce)
      if (bytes <= upTo) {
        a = algo;
        break;
      }
  if (a == hetcclAlgoOneShot && (bytes == 0 || bytes > c->boardBytes)) a = hetcclAlgoAuto; // board too small
  if (a == hetcclAlgoTwoShot && (bytes == 0 || !twoShotApplies(c))) a = hetcclAlgoAuto;    // no board
  // With one (host, kind) group the hierarchical algorithm is the ring.
  if (a == hetcclAlgoHierarchical && c->groups.size() < 2) a = hetcclAlgoRing;
  if (a == hetcclAlgoAuto)
    a = oneShotApplies(c, bytes)   ? hetcclAlgoOneShot
        : twoShotWins(c, bytes) ? hetcclAlgoTwoShot
                                : pickAllReduce(c, bytes);
  return a;
}

} // namespace hetccl
