// The C API: argument checks, user-buffer handling (in/out of place, device
// staging, Avg), algorithm dispatch, groups, error state and abort.
//
// Error model: a bad argument fails the call with hetcclInvalidArgument and
// leaves the communicator usable. Any failure after communication started
// (timeout, dead peer, bad data, abort) is sticky: the communicator reports
// it through hetcclCommGetAsyncError, refuses further calls, and tells its
// peers (so they fail fast rather than run into their own timeouts).
#include "het-c/hetccl.h"

#include "Algorithms/Algorithms.h"
#include "HostCollectives.h"
#include "Bootstrap/UniqueId.h"
#include "Comm.h"
#include "Common/Error.h"
#include "Compression/Compression.h"
#include "Device/DeviceRuntime.h"
#include "Device/VendorCcl.h"
#include "Types/DataType.h"

#include <cstring>
#include <functional>
#include <new>
#include <unistd.h>

using namespace hetccl;

namespace {

thread_local std::string tlsLastError;

struct Task {
  hetcclComm* comm;
  bool isP2P;
  P2POp op;
  std::function<void()> fn;
};
struct GroupState {
  int depth = 0;
  std::vector<Task> tasks;
};
thread_local GroupState tlsGroup;

hetcclResult_t record(hetcclResult_t r, const std::string& msg) {
  tlsLastError = msg;
  return r;
}

// Runs f for comm c with abort/in-flight accounting and turns exceptions
// into result codes. `communicates` = failures are sticky (see above).
template <typename F> hetcclResult_t guarded(hetcclComm* c, F&& f) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  // Count this call in before looking at the abort flag: hetcclCommAbort
  // raises the flag, then waits for the count to drop to zero before it
  // frees c, so a call that races with it either sees the flag or is
  // waited for (checking first left a window where abort freed c under a
  // call that had just passed the check).
  c->inflight.fetch_add(1);
  if (c->aborted.load()) {
    c->inflight.fetch_sub(1);
    return record(hetcclAborted, "communicator was aborted");
  }
  int err = c->asyncError.load();
  if (err != hetcclSuccess) {
    c->inflight.fetch_sub(1);
    return record(hetcclResult_t(err), std::string("communicator is in error state (") +
                                           hetcclGetErrorString(hetcclResult_t(err)) + "); destroy or abort it");
  }
  hetcclResult_t r = hetcclSuccess;
  try {
    f();
  } catch (const CclError& e) {
    r = e.result();
    tlsLastError = e.what();
    if (r != hetcclInvalidArgument) {
      int expected = hetcclSuccess;
      c->asyncError.compare_exchange_strong(expected, r);
      c->fabric.poisonAll();
    }
  } catch (const std::bad_alloc&) {
    r = hetcclSystemError;
    tlsLastError = "out of host memory";
    c->asyncError.store(r);
    c->fabric.poisonAll();
  }
  c->inflight.fetch_sub(1); // last touch of c: an aborter may free it now
  return r;
}

void checkBuf(const void* p, size_t count, const char* name) {
  if (count > 0 && !p) fail(hetcclInvalidArgument, std::string(name) + " is NULL with a non-zero count");
}
void checkType(hetcclDataType_t t) {
  if (!dtypeValid(t)) fail(hetcclInvalidArgument, "datatype " + std::to_string(int(t)) + " is not a hetccl type");
}
void checkOp(hetcclRedOp_t op) {
  if (!opValid(op)) fail(hetcclInvalidArgument, "reduction op " + std::to_string(int(op)) + " is not a hetccl op");
}
void checkRoot(hetcclComm* c, int root) {
  if (root < 0 || root >= c->nranks)
    fail(hetcclInvalidArgument, "root " + std::to_string(root) + " is out of range [0, " + std::to_string(c->nranks) + ")");
}
size_t bytesOf(size_t count, hetcclDataType_t t) {
  size_t es = dtypeSize(t);
  if (count > SIZE_MAX / 16 / es) fail(hetcclInvalidArgument, "count " + std::to_string(count) + " is too large");
  return count * es;
}

// Queue f when inside a group, else run it now.
hetcclResult_t submit(hetcclComm* c, std::function<void()> f) {
  if (tlsGroup.depth > 0) {
    tlsGroup.tasks.push_back(Task{c, false, P2POp(), std::move(f)});
    return hetcclSuccess;
  }
  return guarded(c, f);
}

// --- Device staging ----------------------------------------------------------

// For cuda/hip ranks: copies the input to host memory, runs the host
// implementation, copies the output back. inBytes/outBytes are what the
// collective reads and writes on this rank.
template <typename F>
void staged(hetcclComm* c, const void* send, size_t inBytes, void* recv, size_t outBytes, F hostFn) {
  if (!c->device) {
    hostFn(send, recv);
    return;
  }
  std::vector<char> hin(inBytes + 1), hout(outBytes + 1);
  if (send && inBytes) c->device->copy(hin.data(), send, inBytes);
  if (recv && outBytes) c->device->copy(hout.data(), recv, outBytes); // in-place inputs live here
  bool inPlace = send == recv;
  hostFn(inPlace ? static_cast<const void*>(hout.data()) : hin.data(), hout.data());
  if (recv && outBytes) c->device->copy(recv, hout.data(), outBytes);
}

} // namespace

// --- C API -------------------------------------------------------------------

extern "C" {

void hetcclConfigInit(hetcclConfig_t* config) {
  if (!config) return;
  hetcclConfig_t d = HETCCL_CONFIG_INITIALIZER;
  *config = d;
}

const char* hetcclGetErrorString(hetcclResult_t r) {
  switch (r) {
  case hetcclSuccess: return "no error";
  case hetcclUnhandledCudaError: return "device runtime call failed";
  case hetcclSystemError: return "system error (socket, shm, or a peer died)";
  case hetcclInternalError: return "internal error";
  case hetcclInvalidArgument: return "invalid argument";
  case hetcclInvalidUsage: return "invalid usage";
  case hetcclRemoteError: return "remote error (a peer failed or sent bad data)";
  case hetcclInProgress: return "in progress";
  case hetcclTimeout: return "timeout";
  case hetcclAborted: return "aborted";
  case hetcclAuthError: return "authentication failed (job token)";
  case hetcclUnavailable: return "vendor library or device runtime unavailable";
  default: return "unknown result code";
  }
}

const char* hetcclGetLastError(hetcclComm_t) { return tlsLastError.c_str(); }

hetcclResult_t hetcclGetVersion(int* version) {
  if (!version) return record(hetcclInvalidArgument, "version is NULL");
  *version = HETCCL_MAJOR * 10000 + HETCCL_MINOR * 100;
  return hetcclSuccess;
}

static hetcclResult_t unguarded(const std::function<void()>& f) {
  try {
    f();
    return hetcclSuccess;
  } catch (const CclError& e) {
    return record(e.result(), e.what());
  } catch (const std::bad_alloc&) {
    return record(hetcclSystemError, "out of host memory");
  }
}

hetcclResult_t hetcclDeviceCount(hetcclDeviceKind_t kind, int* count) {
  if (!count) return record(hetcclInvalidArgument, "count is NULL");
  if (kind == hetcclDeviceNpu)
    return record(hetcclUnavailable, "device kind npu: no NPU runtime is supported yet, so none can be counted");
  if (kind != hetcclDeviceCpu && kind != hetcclDeviceCuda && kind != hetcclDeviceHip)
    return record(hetcclInvalidArgument, "unknown device kind " + std::to_string(int(kind)));
  return unguarded([&] { *count = deviceCount(kind); });
}

hetcclResult_t hetcclGetUniqueId(hetcclUniqueId* id) {
  if (!id) return record(hetcclInvalidArgument, "uniqueId is NULL");
  return unguarded([&] { makeUniqueId(id); });
}

hetcclResult_t hetcclGetUniqueIdAt(hetcclUniqueId* id, const char* root) {
  if (!id) return record(hetcclInvalidArgument, "uniqueId is NULL");
  if (!root) return record(hetcclInvalidArgument, "root is NULL");
  return unguarded([&] { makeUniqueIdForRoot(id, root); });
}

hetcclResult_t hetcclUniqueIdFromEnv(hetcclUniqueId* id) {
  if (!id) return record(hetcclInvalidArgument, "uniqueId is NULL");
  return unguarded([&] { uniqueIdFromEnv(id); });
}

hetcclResult_t hetcclCommInitRank(hetcclComm_t* comm, int nranks, hetcclUniqueId id, int rank,
                                  const hetcclConfig_t* config) {
  if (!comm) return record(hetcclInvalidArgument, "comm is NULL");
  *comm = nullptr;
  return unguarded([&] { *comm = commInit(nranks, id, rank, config); });
}

static int envRankVar(const char* a, const char* b) {
  const char* v = getenv(a);
  if (!v || !*v) v = getenv(b);
  if (!v || !*v) fail(hetcclInvalidArgument, std::string(a) + " is not set");
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 20)) fail(hetcclInvalidArgument, std::string(a) + "='" + v + "' is not a rank number");
  return int(x);
}

hetcclResult_t hetcclCommInitFromEnv(hetcclComm_t* comm, const hetcclConfig_t* config) {
  if (!comm) return record(hetcclInvalidArgument, "comm is NULL");
  *comm = nullptr;
  return unguarded([&] {
    // torchrun's RANK/WORLD_SIZE, or Open MPI's when launched by mpirun.
    int rank = envRankVar("RANK", "OMPI_COMM_WORLD_RANK");
    int size = envRankVar("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE");
    hetcclUniqueId id;
    uniqueIdFromEnv(&id);
    *comm = commInit(size, id, rank, config);
  });
}

hetcclResult_t hetcclCommSplit(hetcclComm_t c, int color, int key, hetcclComm_t* newcomm,
                               const hetcclConfig_t* config) {
  if (!newcomm) return record(hetcclInvalidArgument, "newcomm is NULL");
  *newcomm = nullptr;
  if (tlsGroup.depth > 0) return record(hetcclInvalidUsage, "hetcclCommSplit inside a group is not supported");
  hetcclComm* out = nullptr;
  // Guarded by the parent: its abort ends the split, and a failure after the
  // exchange started (a member died, timeout) is sticky on the parent, which
  // tells its peers so that no member waits out its own timeout.
  hetcclResult_t r = guarded(c, [&] { out = commSplit(c, color, key, config); });
  if (r == hetcclSuccess) *newcomm = out;
  return r;
}

hetcclResult_t hetcclCommDestroy(hetcclComm_t c) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  if (c->inflight.load() > 0) return record(hetcclInvalidUsage, "communicator destroyed while a call is in progress; use hetcclCommAbort");
  delete c;
  return hetcclSuccess;
}

hetcclResult_t hetcclCommRevoke(hetcclComm_t c) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  c->aborted.store(true);
  // Blocked calls see the flag within a few milliseconds and leave.
  while (c->inflight.load() > 0) usleep(1000);
  c->fabric.poisonAll();
  return hetcclSuccess;
}

hetcclResult_t hetcclCommAbort(hetcclComm_t c) {
  hetcclResult_t r = hetcclCommRevoke(c);
  if (r == hetcclSuccess) delete c;
  return r;
}

hetcclResult_t hetcclCommGetAsyncError(hetcclComm_t c, hetcclResult_t* e) {
  if (!c || !e) return record(hetcclInvalidArgument, "communicator or asyncError is NULL");
  *e = c->aborted.load() ? hetcclAborted : hetcclResult_t(c->asyncError.load());
  return hetcclSuccess;
}

hetcclResult_t hetcclCommCount(const hetcclComm_t c, int* count) {
  if (!c || !count) return record(hetcclInvalidArgument, "communicator or count is NULL");
  *count = c->nranks;
  return hetcclSuccess;
}

hetcclResult_t hetcclCommUserRank(const hetcclComm_t c, int* rank) {
  if (!c || !rank) return record(hetcclInvalidArgument, "communicator or rank is NULL");
  *rank = c->rank;
  return hetcclSuccess;
}

hetcclResult_t hetcclCommSetAlgorithm(hetcclComm_t c, hetcclAlgo_t algo) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  if (algo < 0 || algo >= hetcclNumAlgos) return record(hetcclInvalidArgument, "algorithm " + std::to_string(int(algo)) + " does not exist");
  c->algo = algo;
  return hetcclSuccess;
}

hetcclResult_t hetcclCommSetCompression(hetcclComm_t c, hetcclCompression_t z, double ratio) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  if (z < 0 || z >= hetcclNumCompressions) return record(hetcclInvalidArgument, "compression " + std::to_string(int(z)) + " does not exist");
  if (z == hetcclCompressTopK && !(ratio > 0 && ratio <= 1))
    return record(hetcclInvalidArgument, "top-k ratio must be in (0, 1], got " + std::to_string(ratio));
  c->compression = z;
  if (z == hetcclCompressTopK) c->topkRatio = ratio;
  return hetcclSuccess;
}

hetcclResult_t hetcclCommSetTimeout(hetcclComm_t c, int64_t ms) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  if (ms <= 0) return record(hetcclInvalidArgument, "timeout must be positive, got " + std::to_string(ms));
  c->timeoutMs = ms;
  c->fabric.timeoutMs = ms;
  return hetcclSuccess;
}

hetcclResult_t hetcclCommResetErrorFeedback(hetcclComm_t c, const void* buff) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  c->residuals.erase(buff);
  return hetcclSuccess;
}

hetcclResult_t hetcclCommGetBytesSent(hetcclComm_t c, uint64_t* bytes) {
  if (!c || !bytes) return record(hetcclInvalidArgument, "communicator or bytes is NULL");
  *bytes = c->fabric.bytesSent();
  return hetcclSuccess;
}

hetcclResult_t hetcclCommPickAlgorithm(hetcclComm_t c, size_t bytes, hetcclAlgo_t* algo) {
  if (!c || !algo) return record(hetcclInvalidArgument, "communicator or algo is NULL");
  *algo = allReduceAlgorithm(c, bytes);
  return hetcclSuccess;
}

hetcclResult_t hetcclCommTuningKey(hetcclComm_t c, char* key, size_t capacity) {
  if (!c || !key) return record(hetcclInvalidArgument, "communicator or key is NULL");
  std::string text = tuningKey(c);
  if (text.size() + 1 > capacity)
    return record(hetcclInvalidArgument, "the tuning key needs " + std::to_string(text.size() + 1) + " bytes");
  memcpy(key, text.c_str(), text.size() + 1);
  return hetcclSuccess;
}

const char* hetcclAlgoName(hetcclAlgo_t a) {
  static const char* names[] = {"auto", "ring", "tree", "halving_doubling", "hierarchical", "ps", "oneshot", "twoshot"};
  return a >= 0 && a < hetcclNumAlgos ? names[a] : "invalid";
}

hetcclResult_t hetcclAlgoFromName(const char* name, hetcclAlgo_t* algo) {
  if (!name || !algo) return record(hetcclInvalidArgument, "name or algo is NULL");
  for (int a = 0; a < hetcclNumAlgos; ++a)
    if (strcmp(name, hetcclAlgoName(hetcclAlgo_t(a))) == 0) {
      *algo = hetcclAlgo_t(a);
      return hetcclSuccess;
    }
  if (strcmp(name, "hd") == 0 || strcmp(name, "rhd") == 0) {
    *algo = hetcclAlgoHalvingDoubling;
    return hetcclSuccess;
  }
  return record(hetcclInvalidArgument, std::string("unknown algorithm '") + name +
                                           "' (ring|tree|halving_doubling|hierarchical|ps|oneshot|twoshot|auto)");
}

hetcclResult_t hetcclAllReduce(const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op,
                               hetcclComm_t c) {
  return submit(c, [=] {
    checkType(dt);
    checkOp(op);
    checkBuf(send, count, "sendbuff");
    checkBuf(recv, count, "recvbuff");
    size_t bytes = bytesOf(count, dt);
    if (count == 0) return;
    if (c->device && c->device->vendor) {
      c->device->vendor->allReduce(send, recv, count, dt, op);
      c->device->sync();
      return;
    }
    staged(c, send, bytes, recv, bytes, [&](const void* s, void* r) { hostAllReduce(c, s, r, count, dt, op, recv); });
  });
}

hetcclResult_t hetcclAllGather(const void* send, void* recv, size_t sendcount, hetcclDataType_t dt, hetcclComm_t c) {
  return submit(c, [=] {
    checkType(dt);
    checkBuf(send, sendcount, "sendbuff");
    checkBuf(recv, sendcount, "recvbuff");
    size_t bytes = bytesOf(sendcount, dt);
    if (sendcount == 0) return;
    size_t outBytes = bytes * size_t(c->nranks);
    bool inPlace = send == static_cast<char*>(recv) + size_t(c->rank) * bytes;
    if (c->device && inPlace) {
      staged(c, recv, outBytes, recv, outBytes, [&](const void*, void* r) {
        hostAllGather(c, static_cast<char*>(r) + size_t(c->rank) * bytes, r, sendcount, dt);
      });
      return;
    }
    staged(c, send, bytes, recv, outBytes, [&](const void* s, void* r) { hostAllGather(c, s, r, sendcount, dt); });
  });
}

hetcclResult_t hetcclReduceScatter(const void* send, void* recv, size_t recvcount, hetcclDataType_t dt,
                                   hetcclRedOp_t op, hetcclComm_t c) {
  return submit(c, [=] {
    checkType(dt);
    checkOp(op);
    checkBuf(send, recvcount, "sendbuff");
    checkBuf(recv, recvcount, "recvbuff");
    size_t bytes = bytesOf(recvcount, dt);
    if (recvcount == 0) return;
    size_t inBytes = bytes * size_t(c->nranks);
    bool inPlace = recv == static_cast<const char*>(send) + size_t(c->rank) * bytes;
    if (c->device && inPlace) {
      staged(c, send, inBytes, nullptr, 0, [&](const void* s, void*) {
        std::vector<char> out(bytes);
        hostReduceScatter(c, s, out.data(), recvcount, dt, op);
        c->device->copy(recv, out.data(), bytes);
      });
      return;
    }
    staged(c, send, inBytes, recv, bytes, [&](const void* s, void* r) { hostReduceScatter(c, s, r, recvcount, dt, op); });
  });
}

// The V collectives' counts, copied (a grouped call runs after the
// caller's array is gone), with the communicator checked first.
static hetcclResult_t copyCounts(hetcclComm_t c, const size_t* recvcounts, std::vector<size_t>& counts) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  if (!recvcounts) return record(hetcclInvalidArgument, "recvcounts is NULL");
  counts.assign(recvcounts, recvcounts + c->nranks);
  return hetcclSuccess;
}

hetcclResult_t hetcclAllGatherV(const void* send, void* recv, const size_t* recvcounts, hetcclDataType_t dt,
                                hetcclComm_t c) {
  std::vector<size_t> counts;
  if (hetcclResult_t r = copyCounts(c, recvcounts, counts); r != hetcclSuccess) return r;
  return submit(c, [=] {
    checkType(dt);
    size_t total = boundsOf(counts).back(), mine = counts[c->rank];
    checkBuf(send, mine, "sendbuff");
    checkBuf(recv, total, "recvbuff");
    if (total == 0) return;
    staged(c, send, bytesOf(mine, dt), recv, bytesOf(total, dt),
           [&](const void* s, void* out) { hostAllGatherV(c, s, out, counts, dt); });
  });
}

hetcclResult_t hetcclReduceScatterV(const void* send, void* recv, const size_t* recvcounts, hetcclDataType_t dt,
                                    hetcclRedOp_t op, hetcclComm_t c) {
  std::vector<size_t> counts;
  if (hetcclResult_t r = copyCounts(c, recvcounts, counts); r != hetcclSuccess) return r;
  return submit(c, [=] {
    checkType(dt);
    checkOp(op);
    size_t total = boundsOf(counts).back(), mine = counts[c->rank];
    checkBuf(send, total, "sendbuff");
    checkBuf(recv, mine, "recvbuff");
    if (total == 0) return;
    staged(c, send, bytesOf(total, dt), recv, bytesOf(mine, dt),
           [&](const void* s, void* out) { hostReduceScatterV(c, s, out, counts, dt, op); });
  });
}

hetcclResult_t hetcclBroadcast(const void* send, void* recv, size_t count, hetcclDataType_t dt, int root,
                               hetcclComm_t c) {
  return submit(c, [=] {
    checkType(dt);
    checkRoot(c, root);
    if (c->rank == root) checkBuf(send, count, "sendbuff");
    checkBuf(recv, count, "recvbuff");
    size_t bytes = bytesOf(count, dt);
    if (count == 0) return;
    staged(c, c->rank == root ? send : nullptr, bytes, recv, bytes,
           [&](const void* s, void* r) { hostBroadcast(c, s, r, count, dt, root); });
  });
}

hetcclResult_t hetcclReduce(const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op,
                            int root, hetcclComm_t c) {
  return submit(c, [=] {
    checkType(dt);
    checkOp(op);
    checkRoot(c, root);
    checkBuf(send, count, "sendbuff");
    if (c->rank == root) checkBuf(recv, count, "recvbuff");
    size_t bytes = bytesOf(count, dt);
    if (count == 0) return;
    void* out = c->rank == root ? recv : nullptr;
    staged(c, send, bytes, out, out ? bytes : 0,
           [&](const void* s, void* r) { hostReduce(c, s, r, count, dt, op, root); });
  });
}

hetcclResult_t hetcclAllToAll(const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclComm_t c) {
  return submit(c, [=] {
    checkType(dt);
    checkBuf(send, count, "sendbuff");
    checkBuf(recv, count, "recvbuff");
    size_t bytes = bytesOf(count, dt) * size_t(c->nranks);
    if (count == 0) return;
    staged(c, send, bytes, recv, bytes, [&](const void* s, void* r) { hostAllToAll(c, s, r, count, dt); });
  });
}

hetcclResult_t hetcclAllToAllV(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                               const size_t* recvcounts, const size_t* rdispls, hetcclDataType_t dt,
                               hetcclComm_t c) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  for (auto [array, name] : {std::pair{sendcounts, "sendcounts"}, {sdispls, "sdispls"},
                             {recvcounts, "recvcounts"}, {rdispls, "rdispls"}})
    if (!array) return record(hetcclInvalidArgument, std::string(name) + " is NULL");
  std::vector<size_t> sc(sendcounts, sendcounts + c->nranks), so(sdispls, sdispls + c->nranks),
      rc(recvcounts, recvcounts + c->nranks), ro(rdispls, rdispls + c->nranks);
  return submit(c, [=] {
    checkType(dt);
    // The elements each side spans: the end of its farthest block.
    size_t sendEnd = 0, recvEnd = 0, sent = 0, received = 0;
    for (int r = 0; r < c->nranks; ++r) {
      if (sc[r]) sendEnd = std::max(sendEnd, so[r] + sc[r]);
      if (rc[r]) recvEnd = std::max(recvEnd, ro[r] + rc[r]);
      sent += sc[r];
      received += rc[r];
    }
    if (sc[c->rank] != rc[c->rank])
      fail(hetcclInvalidArgument, "this rank sends itself " + std::to_string(sc[c->rank]) +
                                      " elements (sendcounts[" + std::to_string(c->rank) + "]) but expects " +
                                      std::to_string(rc[c->rank]) + " (recvcounts[" + std::to_string(c->rank) +
                                      "])");
    checkBuf(send, sent, "sendbuff");
    checkBuf(recv, received, "recvbuff");
    if (sendEnd && recvEnd) {
      // No block may be read after it is written: refuse overlapping buffers.
      const char* s0 = static_cast<const char*>(send);
      const char* r0 = static_cast<const char*>(recv);
      if (s0 < r0 + bytesOf(recvEnd, dt) && r0 < s0 + bytesOf(sendEnd, dt))
        fail(hetcclInvalidArgument, "sendbuff and recvbuff overlap (all-to-all-v has no in-place form)");
    }
    staged(c, send, bytesOf(sendEnd, dt), recv, bytesOf(recvEnd, dt),
           [&](const void* s, void* r) { hostAllToAllV(c, s, sc, so, r, rc, ro, dt); });
  });
}

static hetcclResult_t p2p(bool isSend, void* buf, size_t count, hetcclDataType_t dt, int peer, hetcclComm_t c) {
  if (!c) return record(hetcclInvalidArgument, "communicator is NULL");
  try {
    checkType(dt);
    checkBuf(buf, count, isSend ? "sendbuff" : "recvbuff");
    if (peer < 0 || peer >= c->nranks || peer == c->rank)
      fail(hetcclInvalidArgument, "peer " + std::to_string(peer) + " is not another rank of this communicator");
    if (c->device) fail(hetcclInvalidUsage, "Send/Recv on device buffers is not supported yet; stage to host memory");
  } catch (const CclError& e) {
    return record(e.result(), e.what());
  }
  size_t bytes = count * dtypeSize(dt);
  P2POp op = isSend ? P2POp::sendTo(peer, buf, bytes) : P2POp::recvFrom(peer, buf, bytes);
  if (tlsGroup.depth > 0) {
    tlsGroup.tasks.push_back(Task{c, true, op, nullptr});
    return hetcclSuccess;
  }
  return guarded(c, [&] { c->fabric.run({op}); });
}

hetcclResult_t hetcclSend(const void* send, size_t count, hetcclDataType_t dt, int peer, hetcclComm_t c) {
  return p2p(true, const_cast<void*>(send), count, dt, peer, c);
}

hetcclResult_t hetcclRecv(void* recv, size_t count, hetcclDataType_t dt, int peer, hetcclComm_t c) {
  return p2p(false, recv, count, dt, peer, c);
}

hetcclResult_t hetcclBarrier(hetcclComm_t c) {
  return submit(c, [=] {
    // A one-byte exact all-reduce on the binomial tree: never compressed,
    // 2 log2(p) steps.
    char b = 0;
    treeAllReduce(c, allMembers(c), &b, 1, elemOf(hetcclInt8, hetcclSum));
  });
}

hetcclResult_t hetcclGroupStart(void) {
  ++tlsGroup.depth;
  return hetcclSuccess;
}

hetcclResult_t hetcclGroupEnd(void) {
  if (tlsGroup.depth == 0) return record(hetcclInvalidUsage, "hetcclGroupEnd without hetcclGroupStart");
  if (--tlsGroup.depth > 0) return hetcclSuccess;
  std::vector<Task> tasks;
  tasks.swap(tlsGroup.tasks);
  hetcclResult_t first = hetcclSuccess;
  // Consecutive Send/Recv on one communicator run as one progress loop.
  for (size_t i = 0; i < tasks.size();) {
    hetcclResult_t r;
    if (tasks[i].isP2P) {
      std::vector<P2POp> ops;
      size_t j = i;
      for (; j < tasks.size() && tasks[j].isP2P && tasks[j].comm == tasks[i].comm; ++j) ops.push_back(tasks[j].op);
      r = guarded(tasks[i].comm, [&] { tasks[i].comm->fabric.run(ops); });
      i = j;
    } else {
      r = guarded(tasks[i].comm, tasks[i].fn);
      ++i;
    }
    if (r != hetcclSuccess && first == hetcclSuccess) first = r;
  }
  return first;
}

} // extern "C"
