//===- GpuDriver.h - the vendor driver a GPU executable runs on --*- C++ -*-===//
//
// libhetrt's GPU runtime layer: the CUDA driver API (libcuda) or HIP
// (libamdhip64), opened with dlopen when an executable built for a GPU
// starts, never linked, so libhetrt loads on machines without either. One
// process uses one device: its local rank's (LOCAL_RANK modulo the devices
// the driver shows, after CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES).
//
// Memory: buffers the host driver fills (parameters, batches) and every
// buffer the generated host code allocates are managed (unified) memory,
// so the same pointer works in kernels and on the host; pages migrate to
// the device on first use in a kernel and stay there across steps. Every
// failure names the driver call and its error string.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_GPU_GPUDRIVER_H
#define HET_LIB_RUNTIME_GPU_GPUDRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace het::rt::gpu {

enum class Vendor { Nvidia, Amd };

/// The driver calls the runtime needs, the same for both vendors (HIP's
/// module API mirrors CUDA's driver API).
class Driver {
public:
  virtual ~Driver() = default;
  virtual Vendor vendor() const = 0;
  /// "NVIDIA H100 80GB HBM3 (device 0 of 8)".
  virtual std::string deviceDescription() const = 0;
  virtual void *loadModule(const void *image, size_t bytes) = 0;
  virtual void *function(void *module, const char *name) = 0;
  virtual void *stream() = 0;
  virtual void launch(void *function, int64_t gridX, int64_t gridY, int64_t gridZ,
                      int64_t blockX, int64_t blockY, int64_t blockZ, int32_t sharedBytes,
                      void *stream, void **params, void **extra) = 0;
  virtual void synchronize(void *stream) = 0;
  virtual void *allocateManaged(size_t bytes) = 0;
  virtual void free(void *pointer) = 0;
};

/// Opens the vendor's driver, initializes it, picks and activates this
/// process's device, or ends the process with one line naming what failed
/// (the library that could not be opened, or the driver call and its
/// error). `target` is how the executable was built ("cuda sm_90").
Driver &start(Vendor vendor, const std::string &target);

/// The started driver, or null when this process runs no GPU code.
Driver *active();

/// For an executable built for a GPU (its exported `het_gpu_target` string,
/// "cuda sm_90" or "hip gfx942", written by het-compile): starts the driver
/// and returns a line naming the device; "" for a CPU executable. Called
/// before the first buffer is allocated.
std::string startForExecutable();

/// Whether a pipeline stage's kernels `library` (its replicas line) run on a
/// GPU: "cuda" or "hip" (not the -emulated ones, nor CPU libraries).
bool runsOnGpu(const std::string &library);

/// For a pipeline rank: when its stage's kernels are `library` "cuda" or
/// "hip" (the pipeline description's replicas line) for `arch`, starts that
/// driver on device `ordinal` (modulo the devices it shows; -1: LOCAL_RANK)
/// and returns a line naming the device; "" for CPU kernels and kernels
/// emulated on the host. Called before the rank's first buffer. A device
/// of another architecture fails at the first kernel module, naming the
/// driver call and its error (CUDA_ERROR_NO_BINARY_FOR_GPU).
std::string startForStage(const std::string &library, const std::string &arch, int ordinal = -1);

} // namespace het::rt::gpu

#endif
