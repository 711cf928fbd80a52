// The vendor collective library of a device group: NCCL (libnccl.so.2) for
// cuda ranks, RCCL (librccl.so) for hip ranks, opened with dlopen. RCCL
// exports NCCL's C API under the same names, so one binding serves both.
// Only the handful of entry points hetccl calls are bound.
#pragma once

#include "het-c/hetccl.h"

#include <cstddef>
#include <string>

namespace hetccl {

class VendorCcl {
public:
  // Returns nullptr (and a reason) when the library is not installed.
  static VendorCcl* open(hetcclDeviceKind_t kind, std::string* why);
  // The vendor's 128-byte unique id, made by the group leader.
  std::string makeId();
  void initComm(int nranks, const std::string& id, int rank);
  // In-place or out-of-place all-reduce on device memory, synchronised.
  void allReduce(const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op);

private:
  void* lib_ = nullptr;
  void* comm_ = nullptr;
  int (*getUniqueId_)(void*) = nullptr;
  int (*allReduce_)(const void*, void*, size_t, int, int, void*, void*) = nullptr;
  const char* (*errStr_)(int) = nullptr;
  void* commInitRankRaw_ = nullptr; // takes the 128-byte id by value
};

} // namespace hetccl
