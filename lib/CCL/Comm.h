// The communicator: who the ranks are, how they group by (host, device
// kind), one Link per peer, and the per-communicator state of algorithms
// and compression.
#pragma once

#include "het-c/hetccl.h"

#include "Bootstrap/Rendezvous.h"
#include "Device/DeviceRuntime.h"
#include "Transport/Progress.h"
#include "Transport/Shm.h"

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct hetcclComm {
  int rank = 0;
  int nranks = 1;
  hetcclDeviceKind_t kind = hetcclDeviceCpu;
  int deviceIndex = -1;
  std::string host;
  std::vector<hetccl::PeerInfo> peers;

  // Topology: ranks grouped by (host, kind), in rank order. Algorithms that
  // work on a subset of ranks (hierarchical) take member lists from here.
  std::vector<std::vector<int>> groups;
  std::vector<int> groupOfRank;
  std::vector<int> localIndex; // index of a rank within its group
  std::vector<std::vector<int>> hostGroups; // ranks by host only

  hetccl::Fabric fabric;
  std::vector<std::unique_ptr<hetccl::ShmSegment>> shm; // [0] is ours
  std::vector<hetccl::ShmSegment*> segOfRank;           // null for ranks not on this host

  // The board of the one-shot and two-shot all-reduces (Transport/ShmBoard.h):
  // its bytes per slot (HETCCL_BOARD_BYTES; 0 = none, and always 0 unless
  // every rank is on this host), the largest all-reduce `auto` runs one-shot
  // (HETCCL_ONESHOT_BYTES, at most the board), and how many board calls
  // (one-shot calls and two-shot chunks) this rank has made.
  uint64_t boardBytes = 0;
  uint64_t oneShotLimit = 0;
  uint64_t boardCalls = 0;
  // Whether every pair of this host's ranks can read each other's memory
  // with process_vm_readv (AllToAllV's single-copy blocks on the board):
  // 0 not asked yet, 1 yes, -1 no (Algorithms/AllToAllV.cpp asks once).
  int singleCopy = 0;

  // The tuning database's all-reduce choices for this communicator: (largest
  // size in bytes served, algorithm), ascending (Algorithms/Tuned.cpp); empty
  // when untuned.
  std::vector<std::pair<uint64_t, hetcclAlgo_t>> tunedAllReduce;

  // Defaults picked at init from config and environment; API overrides win.
  hetcclAlgo_t algo = hetcclAlgoAuto;
  hetcclCompression_t compression = hetcclCompressNone;
  double topkRatio = 0.01;
  int64_t timeoutMs = 300000;

  std::atomic<bool> aborted{false};
  std::atomic<int> inflight{0};
  std::atomic<int> asyncError{hetcclSuccess};

  // Top-k error feedback: the residual of each buffer, keyed by address.
  std::unordered_map<const void*, std::vector<float>> residuals;

  // Device staging (cuda/hip ranks): runtime opened with dlopen.
  hetccl::DeviceRuntime* device = nullptr;

  // Reused host buffers, grown on demand, so steady-state calls allocate nothing.
  std::vector<char> scratch[3];
  char* scratchBuf(int i, size_t bytes) {
    if (scratch[i].size() < bytes) scratch[i].resize(bytes);
    return scratch[i].data();
  }
};

namespace hetccl {

// What hetcclCommSplit passes to commInit besides the id.
struct InitOptions {
  Fd rootListen; // rank 0: already listening at the id's root address
  // Polled by init's waits instead of the new communicator's own flag (which
  // no one can raise yet): the parent's, so aborting the parent ends a split.
  const std::atomic<bool>* abortFlag = nullptr;
};

// Creates the communicator: rendezvous, topology, shm rings, TCP links.
hetcclComm* commInit(int nranks, const hetcclUniqueId& id, int rank, const hetcclConfig_t* config,
                     InitOptions* opts = nullptr);
// Throws hetcclInvalidArgument if commInit would reject `config` (NULL is
// fine) with the current environment. Talks to no one.
void checkConfig(const hetcclConfig_t* config);
// The IPv4 address commInit binds data sockets to for `config`.
std::string dataBindAddr(const hetcclConfig_t* config);

// hetcclCommSplit (Split.cpp); returns nullptr for HETCCL_SPLIT_NOCOLOR.
hetcclComm* commSplit(hetcclComm* parent, int color, int key, const hetcclConfig_t* config);

} // namespace hetccl
