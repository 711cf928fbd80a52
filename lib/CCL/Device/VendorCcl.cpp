#include "Device/VendorCcl.h"

#include "Common/Error.h"

#include <cstring>
#include <dlfcn.h>

namespace hetccl {

namespace {
struct NcclUniqueId {
  char internal[128];
};
using CommInitRankFn = int (*)(void**, int, NcclUniqueId, int);
// ncclDataType_t values for our types (NCCL and RCCL agree).
int vendorType(hetcclDataType_t t) {
  switch (t) {
  case hetcclInt8: return 0;
  case hetcclUint8: return 1;
  case hetcclInt32: return 2;
  case hetcclInt64: return 4;
  case hetcclFloat16: return 6;
  case hetcclFloat32: return 7;
  case hetcclFloat64: return 8;
  case hetcclBfloat16: return 9;
  default: return -1;
  }
}
} // namespace

VendorCcl* VendorCcl::open(hetcclDeviceKind_t kind, std::string* why) {
  const char* name = kind == hetcclDeviceCuda ? "libnccl.so.2" : "librccl.so";
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    *why = std::string(name) + " not found; device collectives are staged through host memory";
    return nullptr;
  }
  auto* v = new VendorCcl;
  v->lib_ = lib;
  v->getUniqueId_ = reinterpret_cast<int (*)(void*)>(dlsym(lib, "ncclGetUniqueId"));
  v->commInitRankRaw_ = dlsym(lib, "ncclCommInitRank");
  v->allReduce_ = reinterpret_cast<int (*)(const void*, void*, size_t, int, int, void*, void*)>(dlsym(lib, "ncclAllReduce"));
  v->errStr_ = reinterpret_cast<const char* (*)(int)>(dlsym(lib, "ncclGetErrorString"));
  if (!v->getUniqueId_ || !v->commInitRankRaw_ || !v->allReduce_ || !v->errStr_) {
    *why = std::string(name) + " lacks the NCCL entry points";
    dlclose(lib);
    delete v;
    return nullptr;
  }
  return v;
}

std::string VendorCcl::makeId() {
  NcclUniqueId id;
  int rc = getUniqueId_(&id);
  if (rc != 0) fail(hetcclUnhandledCudaError, std::string("ncclGetUniqueId: ") + errStr_(rc));
  return std::string(id.internal, sizeof id.internal);
}

void VendorCcl::initComm(int nranks, const std::string& id, int rank) {
  if (id.size() != sizeof(NcclUniqueId)) fail(hetcclRemoteError, "malformed vendor unique id");
  NcclUniqueId u;
  memcpy(u.internal, id.data(), sizeof u.internal);
  int rc = reinterpret_cast<CommInitRankFn>(commInitRankRaw_)(&comm_, nranks, u, rank);
  if (rc != 0) fail(hetcclUnhandledCudaError, std::string("ncclCommInitRank: ") + errStr_(rc));
}

void VendorCcl::allReduce(const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op) {
  // ncclRedOp_t: sum 0, prod 1, max 2, min 3, avg 4 (ours orders min, max).
  int vop = op == hetcclMin ? 3 : op == hetcclMax ? 2 : int(op);
  int rc = allReduce_(send, recv, count, vendorType(dt), vop, comm_, nullptr /* default stream */);
  if (rc != 0) fail(hetcclUnhandledCudaError, std::string("ncclAllReduce: ") + errStr_(rc));
}

} // namespace hetccl
