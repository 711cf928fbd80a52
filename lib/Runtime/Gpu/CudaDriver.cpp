//===- CudaDriver.cpp - the CUDA driver API, opened at run time ------------===//
//
// libcuda.so.1 (or $HET_CUDA_DRIVER), its entry points by their versioned
// names (the ABI the CUDA headers map the plain names to). The primary
// context of the chosen device, one stream per process, managed memory.
//
//===----------------------------------------------------------------------===//

#include "GpuDriverImpl.h"

#include <cstdlib>
#include <dlfcn.h>
#include <tuple>
#include <utility>

namespace het::rt::gpu {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
constexpr int kAttachGlobal = 1; // CU_MEM_ATTACH_GLOBAL

/// The errors a machine without a working driver gives before any call
/// can describe them (cuda.h's names and meanings).
std::pair<const char *, const char *> knownError(CUresult result) {
  switch (result) {
  case 3: return {"CUDA_ERROR_NOT_INITIALIZED", "the driver is not initialized"};
  case 34: return {"CUDA_ERROR_STUB_LIBRARY", "this libcuda is the CUDA toolkit's link stub, "
                                              "not a driver"};
  case 35: return {"CUDA_ERROR_INSUFFICIENT_DRIVER", "the installed driver is older than the "
                                                     "CUDA runtime"};
  case 100: return {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"};
  case 999: return {"CUDA_ERROR_UNKNOWN", "unknown error"};
  default: return {nullptr, nullptr};
  }
}

class CudaDriver final : public Driver {
public:
  explicit CudaDriver(const std::string &target) {
    const char *path = std::getenv("HET_CUDA_DRIVER");
    std::string library = path && *path ? path : "libcuda.so.1";
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      fail("this executable runs its kernels on an NVIDIA GPU (" + target +
           "), but the CUDA driver could not be loaded: " + dlerror() +
           " (is an NVIDIA driver installed? $HET_CUDA_DRIVER names another libcuda)");
    bind(getErrorName, "cuGetErrorName");
    bind(getErrorString, "cuGetErrorString");
    bind(init, "cuInit");
    bind(deviceGetCount, "cuDeviceGetCount");
    bind(deviceGet, "cuDeviceGet");
    bind(deviceGetName, "cuDeviceGetName");
    bind(primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(ctxSetCurrent, "cuCtxSetCurrent");
    bind(moduleLoadData, "cuModuleLoadData");
    bind(moduleGetFunction, "cuModuleGetFunction");
    bind(launchKernel, "cuLaunchKernel");
    bind(streamCreate, "cuStreamCreate");
    bind(streamSynchronize, "cuStreamSynchronize");
    bind(memAllocManaged, "cuMemAllocManaged");
    bind(memFree, "cuMemFree_v2");

    check(init(0), "cuInit");
    int count = 0;
    check(deviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0)
      fail("this executable runs its kernels on an NVIDIA GPU (" + target +
           "), but the CUDA driver shows none (CUDA_VISIBLE_DEVICES=" +
           (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset") +
           ")");
    ordinal = localDeviceIndex(count);
    devices = count;
    check(deviceGet(&device, ordinal), "cuDeviceGet");
    check(primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
    check(ctxSetCurrent(context), "cuCtxSetCurrent");
    check(streamCreate(&defaultStream, 0), "cuStreamCreate");
  }

  Vendor vendor() const override { return Vendor::Nvidia; }
  std::string deviceDescription() const override {
    char name[256] = {0};
    const_cast<CudaDriver *>(this)->check(deviceGetName(name, sizeof(name) - 1, device),
                                          "cuDeviceGetName");
    return std::string(name) + " (device " + std::to_string(ordinal) + " of " +
           std::to_string(devices) + ")";
  }
  void *loadModule(const void *image, size_t) override {
    void *module = nullptr;
    check(moduleLoadData(&module, image), "cuModuleLoadData");
    return module;
  }
  void *function(void *module, const char *name) override {
    void *f = nullptr;
    check(moduleGetFunction(&f, module, name), std::string("cuModuleGetFunction(") + name + ")");
    return f;
  }
  void *stream() override { return defaultStream; }
  void launch(void *f, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
              int32_t shared, void *s, void **params, void **extra) override {
    check(launchKernel(f, unsigned(gx), unsigned(gy), unsigned(gz), unsigned(bx), unsigned(by),
                       unsigned(bz), unsigned(shared), s, params, extra),
          "cuLaunchKernel");
  }
  void synchronize(void *s) override { check(streamSynchronize(s), "cuStreamSynchronize"); }
  void *allocateManaged(size_t bytes) override {
    void *p = nullptr;
    check(memAllocManaged(&p, bytes, kAttachGlobal),
          "cuMemAllocManaged(" + std::to_string(bytes) + " bytes)");
    return p;
  }
  void free(void *p) override { check(memFree(p), "cuMemFree"); }

private:
  template <typename F> void bind(F &slot, const char *name) {
    slot = reinterpret_cast<F>(dlsym(handle, name));
    if (!slot)
      fail(std::string("the CUDA driver has no ") + name + " (driver too old for CUDA 11?)");
  }
  void check(CUresult result, const std::string &call) {
    if (result == 0)
      return;
    const char *name = nullptr, *text = nullptr;
    if (getErrorName && getErrorName(result, &name) != 0)
      name = nullptr;
    if (getErrorString && getErrorString(result, &text) != 0)
      text = nullptr;
    if (!name) // a stub or broken driver cannot name its own errors
      std::tie(name, text) = knownError(result);
    fail(call + " failed: " + (name ? name : "CUDA error") + " (" + std::to_string(result) +
         ")" + (text ? std::string(": ") + text : std::string()));
  }

  void *handle = nullptr;
  CUresult (*getErrorName)(CUresult, const char **) = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*deviceGetCount)(int *) = nullptr;
  CUresult (*deviceGet)(CUdevice *, int) = nullptr;
  CUresult (*deviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*moduleLoadData)(void **, const void *) = nullptr;
  CUresult (*moduleGetFunction)(void **, void *, const char *) = nullptr;
  CUresult (*launchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void *, void **, void **) = nullptr;
  CUresult (*streamCreate)(void **, unsigned) = nullptr;
  CUresult (*streamSynchronize)(void *) = nullptr;
  CUresult (*memAllocManaged)(void **, size_t, unsigned) = nullptr;
  CUresult (*memFree)(void *) = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  void *defaultStream = nullptr;
  int ordinal = 0, devices = 0;
};

} // namespace

std::unique_ptr<Driver> startCuda(const std::string &target) {
  return std::make_unique<CudaDriver>(target);
}

} // namespace het::rt::gpu
