//===- KernelProfile.h - where a GPU executable's time goes -----*- C++ -*-===//
//
// With HET_GPU_PROFILE=1 in the environment, a GPU executable times every
// kernel launch and prints, when it exits, the kernels that took the most
// time: calls, total and mean time, and the launch's grid and block. A
// launch is timed from the launch call to the end of the synchronization
// MLIR's host code makes after it, so the time is the kernel's own plus
// the launch's overhead; what a step spends outside kernels is the step's
// time less their sum. Off by default: it costs a clock read per launch.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_GPU_KERNELPROFILE_H
#define HET_LIB_RUNTIME_GPU_KERNELPROFILE_H

#include <cstdint>

namespace het::rt::gpu {

/// Whether HET_GPU_PROFILE asks for the profile (read once).
bool profilingKernels();

/// The kernel `function` is called `name` (from mgpuModuleGetFunction).
void nameKernel(void *function, const char *name);

/// A launch of `function` starts now / the stream synchronized: the launch
/// before it, if any, ends now.
void launchStarted(void *function, int64_t gridX, int64_t gridY, int64_t gridZ, int64_t blockX,
                   int64_t blockY, int64_t blockZ);
void streamSynchronized();

} // namespace het::rt::gpu

#endif
