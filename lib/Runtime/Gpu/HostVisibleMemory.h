//===- HostVisibleMemory.h - buffers both host and kernels use ---*- C++ -*-===//
#ifndef HET_LIB_RUNTIME_GPU_HOSTVISIBLEMEMORY_H
#define HET_LIB_RUNTIME_GPU_HOSTVISIBLEMEMORY_H

#include <array>
#include <cstddef>
#include <string>

namespace het::rt {

/// `bytes` (not zeroed) that the host code and, when this process runs a GPU
/// executable, the kernels can use: managed memory from the started GPU
/// driver, else host memory aligned to `alignment` (at least 64).
void *allocateHostVisible(size_t bytes, size_t alignment = 64);
void freeHostVisible(void *pointer);

/// What a buffer holds, for --profile-memory's account of the peak: the
/// runtime says so when it allocates a buffer or keeps a result, and every
/// buffer the compiled code allocates while a step function runs is one of
/// its temporaries.
enum class MemoryUse : unsigned char {
  Parameters,
  Gradients,      // accumulated over a step's micro-batches
  OptimizerState, // moments, loss scale, BatchNorm's running statistics
  Activations,    // kept by a forward for its micro-batch's backward
  BatchData,      // the step's samples, labels, token windows
  StepResults,    // a function's results before the runtime keeps them
  Temporaries,    // allocated inside a step function while it runs
  Other,
};
constexpr int kMemoryUses = 8;
const char *memoryUseName(MemoryUse use);

/// Buffers allocated while a scope is open count as `use` (the driver's
/// thread opens them; the kernels' worker threads allocate under them).
class MemoryUseScope {
public:
  explicit MemoryUseScope(MemoryUse use);
  ~MemoryUseScope();
  MemoryUseScope(const MemoryUseScope &) = delete;
  MemoryUseScope &operator=(const MemoryUseScope &) = delete;

private:
  MemoryUse previous_;
};
/// Counts a live buffer as `use` from now on (a result the runtime keeps).
void setMemoryUse(const void *buffer, MemoryUse use);
/// What the process is doing ("step 1, backward of micro-batch 2"): the
/// account of the peak names the phase it was reached in.
void setMemoryPhase(const std::string &phase);

/// What the process holds in these buffers: every argument, result and
/// optimizer-state buffer of the runtime and every buffer the compiled
/// step allocates (parameters, gradients, state, activations, the step's
/// temporaries); not oneDNN's scratchpads or hetccl's staging. The peak
/// comes with its buffers by use and the phase it was reached in.
struct BufferMemory {
  size_t live = 0, peak = 0;
  std::array<size_t, kMemoryUses> peakByUse{};
  std::string peakPhase;
};
BufferMemory bufferMemory();

} // namespace het::rt

#endif
