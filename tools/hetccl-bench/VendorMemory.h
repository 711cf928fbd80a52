// Device memory for hetccl-bench's -D option: the benchmark's buffers on a
// CUDA or HIP device, allocated and filled through the vendor runtime
// opened at run time (libcudart / libamdhip64), as hetccl itself opens it,
// so one binary runs on machines with and without a GPU.
#pragma once

#include "het-c/hetccl.h"

#include <cstddef>
#include <string>

namespace hetcclbench {

class VendorMemory {
public:
  /// Opens the runtime of `kind` and makes device `index` current; false,
  /// with `why` naming the library or call that failed, otherwise.
  bool open(hetcclDeviceKind_t kind, int index, std::string* why);

  /// Device allocations and copies; false with `why` naming the call and
  /// the runtime's error string.
  bool alloc(void** pointer, size_t bytes, std::string* why);
  void release(void* pointer);
  bool copy(void* destination, const void* source, size_t bytes, std::string* why);

private:
  bool check(int code, const char* call, std::string* why);

  const char* prefix_ = "cuda";
  int (*malloc_)(void**, size_t) = nullptr;
  int (*free_)(void*) = nullptr;
  int (*memcpy_)(void*, const void*, size_t, int) = nullptr; // kind 4: cudaMemcpyDefault / hipMemcpyDefault
  int (*setDevice_)(int) = nullptr;
  int (*synchronize_)() = nullptr;
  const char* (*errorString_)(int) = nullptr;
};

} // namespace hetcclbench
