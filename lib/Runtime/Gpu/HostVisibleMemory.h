//===- HostVisibleMemory.h - buffers both host and kernels use ---*- C++ -*-===//
#ifndef HET_LIB_RUNTIME_GPU_HOSTVISIBLEMEMORY_H
#define HET_LIB_RUNTIME_GPU_HOSTVISIBLEMEMORY_H

#include <cstddef>

namespace het::rt {

/// `bytes` (not zeroed) that the host code and, when this process runs a GPU
/// executable, the kernels can use: managed memory from the started GPU
/// driver, else host memory aligned to `alignment` (at least 64).
void *allocateHostVisible(size_t bytes, size_t alignment = 64);
void freeHostVisible(void *pointer);

/// What the process holds in these buffers: every argument, result and
/// optimizer-state buffer of the runtime and every buffer the compiled
/// step allocates (parameters, gradients, state, activations, the step's
/// temporaries); not oneDNN's scratchpads or hetccl's staging.
struct BufferMemory {
  size_t live = 0, peak = 0;
};
BufferMemory bufferMemory();

} // namespace het::rt

#endif
