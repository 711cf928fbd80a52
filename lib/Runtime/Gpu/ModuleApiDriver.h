//===- ModuleApiDriver.h - what the CUDA and HIP drivers share ---*- C++ -*-===//
//
// HIP's module API mirrors the CUDA driver API call for call: loading a code
// object, looking up a kernel, launching it, synchronizing a stream,
// managed memory. This class holds those calls, bound by name from the
// vendor's library, and everything done with them; CudaDriver.cpp and
// HipDriver.cpp only open their library, start the device and name errors.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_GPU_MODULEAPIDRIVER_H
#define HET_LIB_RUNTIME_GPU_MODULEAPIDRIVER_H

#include "GpuDriverImpl.h"

#include <string>

namespace het::rt::gpu {

class ModuleApiDriver : public Driver {
public:
  std::string deviceDescription() const override;
  void *loadModule(const void *image, size_t bytes) override;
  void *function(void *module, const char *name) override;
  void *stream() override { return defaultStream; }
  void launch(void *function, int64_t gridX, int64_t gridY, int64_t gridZ, int64_t blockX,
              int64_t blockY, int64_t blockZ, int32_t sharedBytes, void *stream, void **params,
              void **extra) override;
  void synchronize(void *stream) override;
  void *allocateManaged(size_t bytes) override;
  void free(void *pointer) override;

protected:
  /// The vendor's entry points, by its names (`names` in the order of
  /// ModuleCalls' members: load, get function, launch, synchronize,
  /// allocate managed, free).
  struct ModuleCalls {
    int (*moduleLoadData)(void **, const void *) = nullptr;
    int (*moduleGetFunction)(void **, void *, const char *) = nullptr;
    int (*launchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, void *, void **, void **) = nullptr;
    int (*streamSynchronize)(void *) = nullptr;
    int (*allocateManaged)(void **, size_t, unsigned) = nullptr;
    int (*free)(void *) = nullptr;
    int (*deviceGetName)(char *, int, int) = nullptr;
  };
  struct CallNames {
    const char *moduleLoadData, *moduleGetFunction, *launchKernel, *streamSynchronize,
        *allocateManaged, *free, *deviceGetName;
  };

  /// Opens the first of `libraries` that loads, or fails with
  /// `cannotLoad` followed by dlerror's text.
  void open(std::initializer_list<std::string> libraries, const std::string &cannotLoad,
            const std::string &hint);
  /// The entry point `name` of the opened library, or a failure naming it.
  void *symbol(const char *name);
  template <typename F> void bind(F &slot, const char *name) {
    slot = reinterpret_cast<F>(symbol(name));
  }
  void bindModuleCalls(const CallNames &names);
  /// Ends the process naming `call` and the error, unless `result` is 0.
  void check(int result, const std::string &call) const;
  /// "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected".
  virtual std::string describeError(int result) const = 0;
  /// After the device is chosen and current: `chosen` of `count`, and its
  /// name (asked by the vendor's device handle) for the log line.
  void rememberDevice(int handle, int chosen, int count);

  void *handle = nullptr;
  void *defaultStream = nullptr;
  ModuleCalls calls;
  CallNames names{};
  std::string vendorLibrary; // for messages: "the CUDA driver"
  int ordinal = 0, devices = 0;
  std::string deviceName;
};

} // namespace het::rt::gpu

#endif
