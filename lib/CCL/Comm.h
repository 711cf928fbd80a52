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

// Creates the communicator: rendezvous, topology, shm rings, TCP links.
hetcclComm* commInit(int nranks, const hetcclUniqueId& id, int rank, const hetcclConfig_t* config,
                     hetcclComm* abortTarget = nullptr);

} // namespace hetccl
