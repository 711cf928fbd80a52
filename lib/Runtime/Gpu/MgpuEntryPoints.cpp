//===- MgpuEntryPoints.cpp - the calls MLIR's GPU host code makes ----------===//
//
// MLIR 19's lowering of gpu.launch_func (gpu-to-llvm and the gpu.binary
// translation) emits, around every launch: mgpuModuleLoad of the embedded
// code object, mgpuModuleGetFunction, mgpuStreamCreate, mgpuLaunchKernel,
// mgpuStreamSynchronize, mgpuStreamDestroy and mgpuModuleUnload. MLIR's own
// runtime wrappers would load and unload the module at each of a step's
// hundreds of launches; these load each code object once per process (by
// its address), look each kernel up once, launch on the process's one
// stream and leave the module loaded until exit.
//
// With finalize-memref-to-llvm's generic allocation functions, every buffer
// the host code allocates comes from _mlir_memref_to_llvm_alloc: managed
// memory when a GPU driver is started (HostVisibleMemory.cpp).
//
//===----------------------------------------------------------------------===//

#include "GpuDriverImpl.h"
#include "HostVisibleMemory.h"
#include "KernelProfile.h"

#include <map>
#include <mutex>
#include <utility>

using namespace het::rt::gpu;

namespace {

Driver &driver() {
  Driver *d = active();
  if (!d)
    fail("a GPU kernel was launched before the GPU driver was started (the executable's "
         "het_gpu_target, or its pipeline stage's cuda/hip kernels, are missing)");
  return *d;
}

std::mutex cacheMutex;
std::map<const void *, void *> modules;                      // code object -> module
// (module, name) -> kernel; the names are the constant globals the host
// code passes, one per kernel, so their addresses are the keys.
std::map<std::pair<void *, const char *>, void *> functions;

} // namespace

extern "C" void *mgpuModuleLoad(void *image, size_t bytes) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  void *&module = modules[image];
  if (!module)
    module = driver().loadModule(image, bytes);
  return module;
}

extern "C" void mgpuModuleUnload(void *) {} // kept loaded: the next launch needs it again

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  std::lock_guard<std::mutex> lock(cacheMutex);
  void *&f = functions[{module, name}];
  if (!f) {
    f = driver().function(module, name);
    if (profilingKernels())
      nameKernel(f, name);
  }
  return f;
}

extern "C" void *mgpuStreamCreate() { return driver().stream(); }
extern "C" void mgpuStreamDestroy(void *) {}
extern "C" void mgpuStreamSynchronize(void *stream) {
  driver().synchronize(stream);
  if (profilingKernels())
    streamSynchronized();
}

extern "C" void mgpuLaunchKernel(void *function, int64_t gridX, int64_t gridY, int64_t gridZ,
                                 int64_t blockX, int64_t blockY, int64_t blockZ,
                                 int32_t sharedBytes, void *stream, void **params, void **extra,
                                 size_t /*paramsCount*/) {
  if (profilingKernels())
    launchStarted(function, gridX, gridY, gridZ, blockX, blockY, blockZ);
  driver().launch(function, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, stream,
                  params, extra);
}

extern "C" void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  return het::rt::allocateHostVisible(bytes);
}
extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  return het::rt::allocateHostVisible(bytes, alignment);
}
extern "C" void _mlir_memref_to_llvm_free(void *pointer) { het::rt::freeHostVisible(pointer); }
