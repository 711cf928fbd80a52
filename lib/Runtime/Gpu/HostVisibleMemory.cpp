//===- HostVisibleMemory.cpp - buffers both host and kernels use -----------===//
//
// Managed memory on a GPU (pages migrate to the device when a kernel
// touches them and stay there across steps; the host reads a loss or
// writes a batch through the same pointer); aligned host memory otherwise.
// A process decides once, before its first buffer: the driver is started
// (GpuDriver.cpp) before any argument is allocated.
//
// A step allocates and frees the same buffers every time, so freed managed
// blocks are kept by size and handed out again (a driver allocation costs
// far more than a step's kernel): after the first step no driver call
// allocates, and the blocks stay resident on the device.
//
// Every block is counted while it is live (its size and use kept by
// address), so the process knows the peak of its buffers and what they
// held then: what the executables report beside the peak resident set
// (MemoryReport.cpp).
//
//===----------------------------------------------------------------------===//

#include "HostVisibleMemory.h"

#include "GpuDriver.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace het::rt {

namespace {
std::mutex poolMutex;
std::unordered_map<void *, size_t> managedSize;  // live and pooled blocks
std::map<size_t, std::vector<void *>> freeBlocks; // pooled, by size
struct LiveBlock {
  size_t size;
  MemoryUse use;
};
std::unordered_map<const void *, LiveBlock> liveBlocks; // every live block
size_t liveBytes = 0, peakBytes = 0;
std::array<size_t, kMemoryUses> liveByUse{}, peakByUse{};
std::string phase, peakPhase;
// Set by the driver's thread, read by whichever thread allocates.
std::atomic<MemoryUse> currentUse{MemoryUse::Other};

size_t &useBytes(std::array<size_t, kMemoryUses> &bytes, MemoryUse use) {
  return bytes[static_cast<size_t>(use)];
}

/// Under poolMutex.
void counted(void *p, size_t size) {
  MemoryUse use = currentUse.load(std::memory_order_relaxed);
  liveBlocks[p] = {size, use};
  liveBytes += size;
  useBytes(liveByUse, use) += size;
  if (liveBytes > peakBytes) {
    peakBytes = liveBytes;
    peakByUse = liveByUse;
    if (peakPhase != phase)
      peakPhase = phase;
  }
}
} // namespace

const char *memoryUseName(MemoryUse use) {
  switch (use) {
  case MemoryUse::Parameters: return "parameters";
  case MemoryUse::Gradients: return "gradients";
  case MemoryUse::OptimizerState: return "optimizer state";
  case MemoryUse::Activations: return "activations kept for the backward";
  case MemoryUse::BatchData: return "batch data";
  case MemoryUse::StepResults: return "results of the running function";
  case MemoryUse::Temporaries: return "temporaries of the running function";
  case MemoryUse::Other: return "other";
  }
  return "other";
}

MemoryUseScope::MemoryUseScope(MemoryUse use) : previous_(currentUse.exchange(use)) {}
MemoryUseScope::~MemoryUseScope() { currentUse.store(previous_); }

void setMemoryUse(const void *buffer, MemoryUse use) {
  std::lock_guard<std::mutex> lock(poolMutex);
  auto it = liveBlocks.find(buffer);
  if (it == liveBlocks.end() || it->second.use == use)
    return;
  useBytes(liveByUse, it->second.use) -= it->second.size;
  useBytes(liveByUse, use) += it->second.size;
  it->second.use = use;
}

void setMemoryPhase(const std::string &now) {
  std::lock_guard<std::mutex> lock(poolMutex);
  phase = now;
}

void *allocateHostVisible(size_t bytes, size_t alignment) {
  size_t size = std::max<size_t>(bytes, 1);
  if (gpu::Driver *driver = gpu::active()) {
    size = (size + 255) / 256 * 256;
    std::lock_guard<std::mutex> lock(poolMutex);
    void *p = nullptr;
    auto it = freeBlocks.find(size);
    if (it != freeBlocks.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
    } else {
      p = driver->allocateManaged(size); // 256-byte aligned or better
      managedSize[p] = size;
    }
    counted(p, size);
    return p;
  }
  alignment = std::max<size_t>(alignment, 64);
  size = (size + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, size);
  if (p) {
    std::lock_guard<std::mutex> lock(poolMutex);
    counted(p, size);
  }
  return p;
}

void freeHostVisible(void *pointer) {
  if (!pointer)
    return;
  std::lock_guard<std::mutex> lock(poolMutex);
  auto live = liveBlocks.find(pointer);
  if (live != liveBlocks.end()) {
    liveBytes -= live->second.size;
    useBytes(liveByUse, live->second.use) -= live->second.size;
    liveBlocks.erase(live);
  }
  if (gpu::active()) {
    auto it = managedSize.find(pointer);
    if (it != managedSize.end()) {
      freeBlocks[it->second].push_back(pointer);
      return;
    }
  }
  std::free(pointer);
}

BufferMemory bufferMemory() {
  std::lock_guard<std::mutex> lock(poolMutex);
  return {liveBytes, peakBytes, peakByUse, peakPhase};
}

} // namespace het::rt
