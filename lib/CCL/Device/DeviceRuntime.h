// Device memory access for cuda and hip ranks, through the vendor runtime
// opened with dlopen at run time (libcudart / libamdhip64), so one hetccl
// binary runs on machines with or without a GPU. A device rank's buffers
// are staged through host memory for the host algorithms; when the whole
// communicator is one vendor group, collectives go to the vendor's own
// library instead (Device/VendorCcl).
#pragma once

#include "het-c/hetccl.h"

#include <cstddef>

namespace hetccl {

class VendorCcl;

struct DeviceRuntime {
  hetcclDeviceKind_t kind;
  void* lib = nullptr;
  int (*memcpyFn)(void*, const void*, size_t, int) = nullptr; // cudaMemcpy / hipMemcpy
  int (*setDeviceFn)(int) = nullptr;
  int (*syncFn)() = nullptr; // cudaDeviceSynchronize / hipDeviceSynchronize
  const char* (*errStrFn)(int) = nullptr;
  VendorCcl* vendor = nullptr; // NCCL / RCCL, if present

  // cudaMemcpyDefault / hipMemcpyDefault: direction from the pointers (UVA).
  void copy(void* dst, const void* src, size_t n) const;
  void sync() const;
};

// Throws hetcclUnavailable naming the library if the runtime is missing.
// HETCCL_CUDART_LIB / HETCCL_HIP_LIB override the file name.
DeviceRuntime* openDeviceRuntime(hetcclDeviceKind_t kind, int deviceIndex);

// cudaGetDeviceCount / hipGetDeviceCount, 0 when the runtime reports an
// error (no device, no driver). Throws hetcclUnavailable like
// openDeviceRuntime.
int deviceCount(hetcclDeviceKind_t kind);

} // namespace hetccl
