#include "Device/DeviceRuntime.h"

#include "Common/Error.h"

#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace hetccl {

void DeviceRuntime::copy(void* dst, const void* src, size_t n) const {
  if (n == 0) return;
  int rc = memcpyFn(dst, src, n, 4 /* cudaMemcpyDefault == hipMemcpyDefault */);
  if (rc != 0)
    fail(hetcclUnhandledCudaError, std::string(kind == hetcclDeviceCuda ? "cudaMemcpy" : "hipMemcpy") +
                                       " failed: " + (errStrFn ? errStrFn(rc) : std::to_string(rc)));
}

void DeviceRuntime::sync() const {
  int rc = syncFn ? syncFn() : 0;
  if (rc != 0) fail(hetcclUnhandledCudaError, std::string("device synchronize failed: ") + (errStrFn ? errStrFn(rc) : ""));
}

namespace {

// The vendor runtime library of `kind`, or hetcclUnavailable naming what
// was tried.
void* openRuntimeLibrary(hetcclDeviceKind_t kind) {
  bool cuda = kind == hetcclDeviceCuda;
  const char* env = getenv(cuda ? "HETCCL_CUDART_LIB" : "HETCCL_HIP_LIB");
  std::vector<std::string> names;
  if (env && *env) names.push_back(env);
  if (cuda)
    names.insert(names.end(), {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"});
  else
    names.insert(names.end(), {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"});
  std::string tried;
  for (const auto& n : names) {
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    tried += (tried.empty() ? "" : ", ") + n;
  }
  fail(hetcclUnavailable, std::string("device kind ") + (cuda ? "cuda" : "hip") +
                              " needs the vendor runtime, but none could be opened (tried " + tried + ")");
}

} // namespace

int deviceCount(hetcclDeviceKind_t kind) {
  if (kind != hetcclDeviceCuda && kind != hetcclDeviceHip) return 1;
  void* lib = openRuntimeLibrary(kind);
  const char* name = kind == hetcclDeviceCuda ? "cudaGetDeviceCount" : "hipGetDeviceCount";
  auto count = reinterpret_cast<int (*)(int*)>(dlsym(lib, name));
  if (!count) fail(hetcclUnavailable, std::string("runtime library lacks ") + name);
  int n = 0;
  return count(&n) == 0 ? n : 0;
}

DeviceRuntime* openDeviceRuntime(hetcclDeviceKind_t kind, int deviceIndex) {
  bool cuda = kind == hetcclDeviceCuda;
  void* lib = openRuntimeLibrary(kind);
  auto* rt = new DeviceRuntime;
  rt->kind = kind;
  rt->lib = lib;
  const char* p = cuda ? "cuda" : "hip";
  auto sym = [&](const char* base) {
    std::string s = std::string(p) + base;
    void* f = dlsym(lib, s.c_str());
    if (!f) fail(hetcclUnavailable, "runtime library lacks " + s);
    return f;
  };
  rt->memcpyFn = reinterpret_cast<int (*)(void*, const void*, size_t, int)>(sym("Memcpy"));
  rt->setDeviceFn = reinterpret_cast<int (*)(int)>(sym("SetDevice"));
  rt->syncFn = reinterpret_cast<int (*)()>(sym("DeviceSynchronize"));
  rt->errStrFn = reinterpret_cast<const char* (*)(int)>(sym("GetErrorString"));
  if (deviceIndex >= 0) {
    // A process that initialized the runtime and then forked gets
    // "initialization error" here: the runtime does not survive fork().
    if (int rc = rt->setDeviceFn(deviceIndex))
      fail(hetcclUnhandledCudaError, std::string(p) + "SetDevice(" + std::to_string(deviceIndex) +
                                         ") failed: " + rt->errStrFn(rc));
  }
  return rt;
}

} // namespace hetccl
