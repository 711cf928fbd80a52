//===- CudaDriver.cpp - the CUDA driver API, opened at run time ------------===//
//
// libcuda.so.1 (or $HET_CUDA_DRIVER), entry points by their versioned names
// (the ABI cuda.h maps the plain names to). Starting: cuInit, the device of
// this rank, its primary context made current, one stream. The calls used
// afterwards are ModuleApiDriver's.
//
//===----------------------------------------------------------------------===//

#include "ModuleApiDriver.h"

#include <cstdlib>

namespace het::rt::gpu {
namespace {

/// The errors a machine without a working driver gives before any call can
/// describe them (cuda.h's names and meanings).
const char *const *knownError(int result) {
  static const char *const stub[] = {"CUDA_ERROR_STUB_LIBRARY",
                                     "this libcuda is the CUDA toolkit's link stub, not a driver"};
  static const char *const uninitialized[] = {"CUDA_ERROR_NOT_INITIALIZED",
                                              "the driver is not initialized"};
  static const char *const old[] = {"CUDA_ERROR_INSUFFICIENT_DRIVER",
                                    "the installed driver is older than the CUDA runtime"};
  static const char *const none[] = {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"};
  static const char *const unknown[] = {"CUDA_ERROR_UNKNOWN", "unknown error"};
  switch (result) {
  case 3: return uninitialized;
  case 34: return stub;
  case 35: return old;
  case 100: return none;
  case 999: return unknown;
  default: return nullptr;
  }
}

class CudaDriver final : public ModuleApiDriver {
public:
  explicit CudaDriver(const std::string &target) {
    vendorLibrary = "the CUDA driver";
    const char *path = std::getenv("HET_CUDA_DRIVER");
    open({path && *path ? path : "libcuda.so.1"},
         "this executable runs its kernels on an NVIDIA GPU (" + target +
             "), but the CUDA driver could not be loaded: ",
         "is an NVIDIA driver installed? $HET_CUDA_DRIVER names another libcuda");
    bind(getErrorName, "cuGetErrorName");
    bind(getErrorString, "cuGetErrorString");
    bindModuleCalls({"cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel",
                     "cuStreamSynchronize", "cuMemAllocManaged", "cuMemFree_v2",
                     "cuDeviceGetName"});
    int (*init)(unsigned), (*deviceGetCount)(int *), (*deviceGet)(int *, int),
        (*primaryCtxRetain)(void **, int), (*ctxSetCurrent)(void *),
        (*streamCreate)(void **, unsigned);
    bind(init, "cuInit");
    bind(deviceGetCount, "cuDeviceGetCount");
    bind(deviceGet, "cuDeviceGet");
    bind(primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(ctxSetCurrent, "cuCtxSetCurrent");
    bind(streamCreate, "cuStreamCreate");

    check(init(0), "cuInit");
    int count = 0;
    check(deviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0) {
      const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
      fail("this executable runs its kernels on an NVIDIA GPU (" + target +
           "), but the CUDA driver shows none (CUDA_VISIBLE_DEVICES=" +
           (visible ? visible : "unset") + ")");
    }
    int device = 0, chosen = localDeviceIndex(count);
    void *context = nullptr;
    check(deviceGet(&device, chosen), "cuDeviceGet");
    check(primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(ctxSetCurrent(context), "cuCtxSetCurrent");
    check(streamCreate(&defaultStream, 0), "cuStreamCreate");
    rememberDevice(device, chosen, count);
  }
  Vendor vendor() const override { return Vendor::Nvidia; }

private:
  std::string describeError(int result) const override {
    const char *name = nullptr, *text = nullptr;
    if (getErrorName(result, &name) != 0)
      name = nullptr;
    if (getErrorString(result, &text) != 0)
      text = nullptr;
    if (!name) // a stub or broken driver cannot name its own errors
      if (const char *const *known = knownError(result)) {
        name = known[0];
        text = known[1];
      }
    return std::string(name ? name : "CUDA error") + " (" + std::to_string(result) + ")" +
           (text ? std::string(": ") + text : std::string());
  }

  int (*getErrorName)(int, const char **) = nullptr;
  int (*getErrorString)(int, const char **) = nullptr;
};

} // namespace

std::unique_ptr<Driver> startCuda(const std::string &target) {
  return std::make_unique<CudaDriver>(target);
}

} // namespace het::rt::gpu
