//===- HipDriver.cpp - HIP's module API, opened at run time ----------------===//
//
// libamdhip64.so (or $HET_HIP_RUNTIME). Starting: hipInit, this rank's
// device, one stream. The calls used afterwards are ModuleApiDriver's,
// under HIP's names.
//
//===----------------------------------------------------------------------===//

#include "ModuleApiDriver.h"

#include <cstdlib>

namespace het::rt::gpu {
namespace {

class HipDriver final : public ModuleApiDriver {
public:
  explicit HipDriver(const std::string &target) {
    vendorLibrary = "the HIP runtime";
    const char *path = std::getenv("HET_HIP_RUNTIME");
    std::string cannotLoad = "this executable runs its kernels on an AMD GPU (" + target +
                             "), but the HIP runtime could not be loaded: ";
    std::string hint = "is ROCm installed? $HET_HIP_RUNTIME names another libamdhip64";
    if (path && *path)
      open({path}, cannotLoad, hint);
    else
      open({"libamdhip64.so", "libamdhip64.so.5", "libamdhip64.so.6"}, cannotLoad, hint);
    bind(getErrorName, "hipGetErrorName");
    bind(getErrorString, "hipGetErrorString");
    bindModuleCalls({"hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel",
                     "hipStreamSynchronize", "hipMallocManaged", "hipFree",
                     "hipDeviceGetName"});
    int (*init)(unsigned), (*getDeviceCount)(int *), (*setDevice)(int),
        (*streamCreate)(void **);
    bind(init, "hipInit");
    bind(getDeviceCount, "hipGetDeviceCount");
    bind(setDevice, "hipSetDevice");
    bind(streamCreate, "hipStreamCreate");

    check(init(0), "hipInit");
    int count = 0;
    check(getDeviceCount(&count), "hipGetDeviceCount");
    if (count == 0) {
      const char *visible = std::getenv("HIP_VISIBLE_DEVICES");
      fail("this executable runs its kernels on an AMD GPU (" + target +
           "), but HIP shows none (HIP_VISIBLE_DEVICES=" + (visible ? visible : "unset") + ")");
    }
    int chosen = localDeviceIndex(count);
    check(setDevice(chosen), "hipSetDevice");
    check(streamCreate(&defaultStream), "hipStreamCreate");
    rememberDevice(chosen, chosen, count);
  }
  Vendor vendor() const override { return Vendor::Amd; }

private:
  std::string describeError(int result) const override {
    const char *name = getErrorName(result), *text = getErrorString(result);
    return std::string(name ? name : "HIP error") + " (" + std::to_string(result) + ")" +
           (text ? std::string(": ") + text : std::string());
  }

  const char *(*getErrorName)(int) = nullptr;
  const char *(*getErrorString)(int) = nullptr;
};

} // namespace

std::unique_ptr<Driver> startHip(const std::string &target) {
  return std::make_unique<HipDriver>(target);
}

} // namespace het::rt::gpu
