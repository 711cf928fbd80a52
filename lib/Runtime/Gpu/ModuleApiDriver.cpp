//===- ModuleApiDriver.cpp - what the CUDA and HIP drivers share -----------===//

#include "ModuleApiDriver.h"

#include <dlfcn.h>

namespace het::rt::gpu {

namespace {
constexpr unsigned kAttachGlobal = 1; // CU_MEM_ATTACH_GLOBAL, hipMemAttachGlobal
} // namespace

void ModuleApiDriver::open(std::initializer_list<std::string> libraries,
                           const std::string &cannotLoad, const std::string &hint) {
  std::string error;
  for (const std::string &library : libraries) {
    handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle)
      return;
    if (error.empty())
      error = dlerror();
  }
  fail(cannotLoad + error + " (" + hint + ")");
}

void *ModuleApiDriver::symbol(const char *name) {
  void *entry = dlsym(handle, name);
  if (!entry)
    fail(vendorLibrary + " has no " + name + " (too old?)");
  return entry;
}

void ModuleApiDriver::bindModuleCalls(const CallNames &n) {
  names = n;
  bind(calls.moduleLoadData, n.moduleLoadData);
  bind(calls.moduleGetFunction, n.moduleGetFunction);
  bind(calls.launchKernel, n.launchKernel);
  bind(calls.streamSynchronize, n.streamSynchronize);
  bind(calls.allocateManaged, n.allocateManaged);
  bind(calls.free, n.free);
  bind(calls.deviceGetName, n.deviceGetName);
}

void ModuleApiDriver::check(int result, const std::string &call) const {
  if (result != 0)
    fail(call + " failed: " + describeError(result));
}

void ModuleApiDriver::rememberDevice(int handle, int chosen, int count) {
  ordinal = chosen;
  devices = count;
  char name[256] = {0};
  check(calls.deviceGetName(name, sizeof(name) - 1, handle), names.deviceGetName);
  deviceName = name;
}

std::string ModuleApiDriver::deviceDescription() const {
  return deviceName + " (device " + std::to_string(ordinal) + " of " + std::to_string(devices) +
         ")";
}

void *ModuleApiDriver::loadModule(const void *image, size_t) {
  void *module = nullptr;
  check(calls.moduleLoadData(&module, image), names.moduleLoadData);
  return module;
}

void *ModuleApiDriver::function(void *module, const char *name) {
  void *f = nullptr;
  check(calls.moduleGetFunction(&f, module, name),
        std::string(names.moduleGetFunction) + "(" + name + ")");
  return f;
}

void ModuleApiDriver::launch(void *f, int64_t gx, int64_t gy, int64_t gz, int64_t bx, int64_t by,
                             int64_t bz, int32_t shared, void *s, void **params, void **extra) {
  check(calls.launchKernel(f, unsigned(gx), unsigned(gy), unsigned(gz), unsigned(bx),
                           unsigned(by), unsigned(bz), unsigned(shared), s, params, extra),
        names.launchKernel);
}

void ModuleApiDriver::synchronize(void *s) {
  check(calls.streamSynchronize(s), names.streamSynchronize);
}

void *ModuleApiDriver::allocateManaged(size_t bytes) {
  void *p = nullptr;
  check(calls.allocateManaged(&p, bytes, kAttachGlobal),
        std::string(names.allocateManaged) + "(" + std::to_string(bytes) + " bytes)");
  return p;
}

void ModuleApiDriver::free(void *p) { check(calls.free(p), names.free); }

} // namespace het::rt::gpu
