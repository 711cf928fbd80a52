#include "VendorMemory.h"

#include <dlfcn.h>
#include <vector>

namespace hetcclbench {

namespace {

template <typename F> bool bind(void* library, const std::string& name, F& function) {
  function = reinterpret_cast<F>(dlsym(library, name.c_str()));
  return function != nullptr;
}

} // namespace

bool VendorMemory::open(hetcclDeviceKind_t kind, int index, std::string* why) {
  bool cuda = kind == hetcclDeviceCuda;
  if (!cuda && kind != hetcclDeviceHip) {
    *why = "only cuda and hip buffers live in device memory";
    return false;
  }
  prefix_ = cuda ? "cuda" : "hip";
  // The names hetccl tries (lib/CCL/Device/DeviceRuntime.cpp), so the
  // benchmark and the library agree on the runtime.
  std::vector<std::string> names = cuda ? std::vector<std::string>{"libcudart.so", "libcudart.so.13",
                                                                   "libcudart.so.12", "libcudart.so.11.0"}
                                        : std::vector<std::string>{"libamdhip64.so", "libamdhip64.so.6",
                                                                   "libamdhip64.so.5"};
  const char* override = getenv(cuda ? "HETCCL_CUDART_LIB" : "HETCCL_HIP_LIB");
  if (override && *override) names.insert(names.begin(), override);
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : names) {
    if ((library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    tried += (tried.empty() ? "" : ", ") + name;
  }
  if (!library) {
    *why = std::string(prefix_) + " buffers need the vendor runtime, but none could be opened (tried " + tried + ")";
    return false;
  }
  std::string p = prefix_;
  if (!bind(library, p + "Malloc", malloc_) || !bind(library, p + "Free", free_) ||
      !bind(library, p + "Memcpy", memcpy_) || !bind(library, p + "SetDevice", setDevice_) ||
      !bind(library, p + "DeviceSynchronize", synchronize_) || !bind(library, p + "GetErrorString", errorString_)) {
    *why = p + " runtime lacks one of " + p + "Malloc/Free/Memcpy/SetDevice/DeviceSynchronize/GetErrorString";
    return false;
  }
  return check(setDevice_(index), "SetDevice", why);
}

bool VendorMemory::check(int code, const char* call, std::string* why) {
  if (code == 0) return true;
  *why = std::string(prefix_) + call + " failed: " + errorString_(code);
  return false;
}

bool VendorMemory::alloc(void** pointer, size_t bytes, std::string* why) {
  return check(malloc_(pointer, bytes), "Malloc", why);
}

void VendorMemory::release(void* pointer) {
  if (pointer) free_(pointer);
}

bool VendorMemory::copy(void* destination, const void* source, size_t bytes, std::string* why) {
  return check(memcpy_(destination, source, bytes, /*Default: from the pointers*/ 4), "Memcpy", why) &&
         check(synchronize_(), "DeviceSynchronize", why);
}

} // namespace hetcclbench
