//===- HipDriver.cpp - HIP's module API, opened at run time ----------------===//
//
// libamdhip64.so (or $HET_HIP_RUNTIME): the same calls as the CUDA driver
// API under HIP's names; one device per process, one stream, managed
// memory.
//
//===----------------------------------------------------------------------===//

#include "GpuDriverImpl.h"

#include <cstdlib>
#include <dlfcn.h>

namespace het::rt::gpu {
namespace {

using hipError = int;
constexpr unsigned kAttachGlobal = 1; // hipMemAttachGlobal

class HipDriver final : public Driver {
public:
  explicit HipDriver(const std::string &target) {
    const char *path = std::getenv("HET_HIP_RUNTIME");
    std::string library = path && *path ? path : "libamdhip64.so";
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle && !(path && *path))
      handle = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      fail("this executable runs its kernels on an AMD GPU (" + target +
           "), but the HIP runtime could not be loaded: " + dlerror() +
           " (is ROCm installed? $HET_HIP_RUNTIME names another libamdhip64)");
    bind(getErrorName, "hipGetErrorName");
    bind(getErrorString, "hipGetErrorString");
    bind(init, "hipInit");
    bind(getDeviceCount, "hipGetDeviceCount");
    bind(setDevice, "hipSetDevice");
    bind(deviceGetName, "hipDeviceGetName");
    bind(moduleLoadData, "hipModuleLoadData");
    bind(moduleGetFunction, "hipModuleGetFunction");
    bind(moduleLaunchKernel, "hipModuleLaunchKernel");
    bind(streamCreate, "hipStreamCreate");
    bind(streamSynchronize, "hipStreamSynchronize");
    bind(mallocManaged, "hipMallocManaged");
    bind(hipFree, "hipFree");

    check(init(0), "hipInit");
    int count = 0;
    check(getDeviceCount(&count), "hipGetDeviceCount");
    if (count == 0)
      fail("this executable runs its kernels on an AMD GPU (" + target +
           "), but HIP shows none (HIP_VISIBLE_DEVICES=" +
           (std::getenv("HIP_VISIBLE_DEVICES") ? std::getenv("HIP_VISIBLE_DEVICES") : "unset") +
           ")");
    ordinal = localDeviceIndex(count);
    devices = count;
    check(setDevice(ordinal), "hipSetDevice");
    check(streamCreate(&defaultStream), "hipStreamCreate");
  }

  Vendor vendor() const override { return Vendor::Amd; }
  std::string deviceDescription() const override {
    char name[256] = {0};
    const_cast<HipDriver *>(this)->check(deviceGetName(name, sizeof(name) - 1, ordinal),
                                         "hipDeviceGetName");
    return std::string(name) + " (device " + std::to_string(ordinal) + " of " +
           std::to_string(devices) + ")";
  }
  void *loadModule(const void *image, size_t) override {
    void *module = nullptr;
    check(moduleLoadData(&module, image), "hipModuleLoadData");
    return module;
  }
  void *function(void *module, const char *name) override {
    void *f = nullptr;
    check(moduleGetFunction(&f, module, name), std::string("hipModuleGetFunction(") + name + ")");
    return f;
  }
  void *stream() override { return defaultStream; }
  void launch(void *f, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by, int64_t bz,
              int32_t shared, void *s, void **params, void **extra) override {
    check(moduleLaunchKernel(f, unsigned(gx), unsigned(gy), unsigned(gz), unsigned(bx),
                             unsigned(by), unsigned(bz), unsigned(shared), s, params, extra),
          "hipModuleLaunchKernel");
  }
  void synchronize(void *s) override { check(streamSynchronize(s), "hipStreamSynchronize"); }
  void *allocateManaged(size_t bytes) override {
    void *p = nullptr;
    check(mallocManaged(&p, bytes, kAttachGlobal),
          "hipMallocManaged(" + std::to_string(bytes) + " bytes)");
    return p;
  }
  void free(void *p) override { check(hipFree(p), "hipFree"); }

private:
  template <typename F> void bind(F &slot, const char *name) {
    slot = reinterpret_cast<F>(dlsym(handle, name));
    if (!slot)
      fail(std::string("the HIP runtime has no ") + name);
  }
  void check(hipError result, const std::string &call) {
    if (result == 0)
      return;
    const char *name = getErrorName ? getErrorName(result) : nullptr;
    const char *text = getErrorString ? getErrorString(result) : nullptr;
    fail(call + " failed: " + (name ? name : "HIP error") + " (" + std::to_string(result) + ")" +
         (text ? std::string(": ") + text : std::string()));
  }

  void *handle = nullptr;
  const char *(*getErrorName)(hipError) = nullptr;
  const char *(*getErrorString)(hipError) = nullptr;
  hipError (*init)(unsigned) = nullptr;
  hipError (*getDeviceCount)(int *) = nullptr;
  hipError (*setDevice)(int) = nullptr;
  hipError (*deviceGetName)(char *, int, int) = nullptr;
  hipError (*moduleLoadData)(void **, const void *) = nullptr;
  hipError (*moduleGetFunction)(void **, void *, const char *) = nullptr;
  hipError (*moduleLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, unsigned, void *, void **, void **) = nullptr;
  hipError (*streamCreate)(void **) = nullptr;
  hipError (*streamSynchronize)(void *) = nullptr;
  hipError (*mallocManaged)(void **, size_t, unsigned) = nullptr;
  hipError (*hipFree)(void *) = nullptr;
  void *defaultStream = nullptr;
  int ordinal = 0, devices = 0;
};

} // namespace

std::unique_ptr<Driver> startHip(const std::string &target) {
  return std::make_unique<HipDriver>(target);
}

} // namespace het::rt::gpu
