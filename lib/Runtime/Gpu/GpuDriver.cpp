//===- GpuDriver.cpp - starting the vendor driver of a GPU executable ------===//

#include "GpuDriverImpl.h"

#include "../Arguments.h"

#include <cstdlib>
#include <dlfcn.h>

namespace het::rt::gpu {

namespace {
std::unique_ptr<Driver> started;
int deviceOrdinal = -1; // set by startForStage; -1: LOCAL_RANK
} // namespace

void fail(const std::string &message) { het::rt::die(message); }

int localDeviceIndex(int count) {
  int ordinal = deviceOrdinal;
  if (ordinal < 0) {
    const char *local = std::getenv("LOCAL_RANK");
    ordinal = local && *local ? std::atoi(local) : 0;
  }
  return count > 0 ? (ordinal < 0 ? 0 : ordinal % count) : 0;
}

Driver &start(Vendor vendor, const std::string &target) {
  if (!started)
    started = vendor == Vendor::Nvidia ? startCuda(target) : startHip(target);
  return *started;
}

Driver *active() { return started.get(); }

std::string startForExecutable() {
  const auto *target = static_cast<const char *>(dlsym(RTLD_DEFAULT, "het_gpu_target"));
  if (!target)
    return "";
  std::string text(target);
  std::string vendor = text.substr(0, text.find(' '));
  if (vendor != "cuda" && vendor != "hip")
    fail("het_gpu_target '" + text + "' names no GPU vendor het knows (cuda, hip)");
  Driver &driver = start(vendor == "cuda" ? Vendor::Nvidia : Vendor::Amd, text);
  return "gpu " + driver.deviceDescription() + ", " + text.substr(text.find(' ') + 1) +
         " kernels";
}

bool runsOnGpu(const std::string &library) { return library == "cuda" || library == "hip"; }

std::string startForStage(const std::string &library, const std::string &arch, int ordinal) {
  if (!runsOnGpu(library))
    return "";
  if (started && started->vendor() != (library == "cuda" ? Vendor::Nvidia : Vendor::Amd))
    fail("a " + library + " " + arch +
         " stage in a process already running on another "
         "vendor's GPU");
  deviceOrdinal = ordinal;
  std::string target = library + " " + arch;
  Driver &driver = start(library == "cuda" ? Vendor::Nvidia : Vendor::Amd, target);
  return "gpu " + driver.deviceDescription() + ", " + arch + " kernels";
}

} // namespace het::rt::gpu
