// hetccl's device kinds (CUDA, HIP) on whatever machine runs the test.
//
// Without a device (the development machines: CUDA 13 runtime and NCCL
// installed, no GPU) selecting a device kind must end in a clean error that
// names what is missing; the dlopen, symbol binding, NCCL id exchange and
// staging paths run up to the first call that needs a GPU. With a device
// (scripts/gpu_check.sh on a GPU machine) the same calls must succeed and
// reduce correctly, device buffers staged through host memory beside a CPU
// rank. Each test runs on the machines it is about and says so when it
// does not run.
#include "Harness.h"

#include <gtest/gtest.h>

#include <cstring>
#include <algorithm>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <vector>

using namespace hetccltest;

namespace {

/// Devices of `kind` here: -1 when the runtime is not installed. Asked in
/// a child process: counting initializes the vendor runtime, which the
/// ranks this process forks afterwards could not use (on a GPU machine
/// their cudaSetDevice fails with "initialization error").
int devices(hetcclDeviceKind_t kind) {
  pid_t child = fork();
  if (child == 0) {
    int count = 0;
    _exit(hetcclDeviceCount(kind, &count) == hetcclSuccess ? std::min(count, 100) : 255);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) == 255 ? -1 : WEXITSTATUS(status);
}

bool deviceErrorOk(hetcclResult_t res, const char* msg, hetcclDeviceKind_t k) {
  if (res == hetcclUnavailable) return strstr(msg, k == hetcclDeviceCuda ? "libcudart" : "libamdhip64") != nullptr;
  if (res == hetcclUnhandledCudaError)
    return strstr(msg, "nccl") != nullptr || strstr(msg, "cuda") != nullptr || strstr(msg, "hip") != nullptr;
  return false;
}

TEST(Devices, CountNamesWhatIsMissing) {
  int count = -7;
  ASSERT_EQ(hetcclDeviceCount(hetcclDeviceCpu, &count), hetcclSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(hetcclDeviceCount(hetcclDeviceNpu, &count), hetcclUnavailable);
  EXPECT_NE(strstr(hetcclGetLastError(nullptr), "npu"), nullptr) << hetcclGetLastError(nullptr);
  EXPECT_EQ(hetcclDeviceCount(hetcclDeviceCuda, nullptr), hetcclInvalidArgument);
  // In a child, like devices(): this process forks ranks afterwards.
  auto r = runRanks(1, [](int, int, const hetcclUniqueId&) {
    for (hetcclDeviceKind_t k : {hetcclDeviceCuda, hetcclDeviceHip}) {
      int count = -7;
      hetcclResult_t r = hetcclDeviceCount(k, &count);
      printf("device kind %d: %s, %d devices: %s\n", int(k), hetcclGetErrorString(r), count,
             hetcclGetLastError(nullptr));
      if (r != hetcclSuccess)
        RCHECK(deviceErrorOk(r, hetcclGetLastError(nullptr), k), "%s", hetcclGetLastError(nullptr));
      else
        RCHECK(count >= 0, "a negative device count %d", count);
    }
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

TEST(Devices, CudaAndHipWithoutAGpuFailCleanly) {
  std::vector<hetcclDeviceKind_t> kinds;
  for (hetcclDeviceKind_t k : {hetcclDeviceCuda, hetcclDeviceHip})
    if (devices(k) <= 0) kinds.push_back(k);
  if (kinds.empty()) GTEST_SKIP() << "this machine has CUDA and HIP devices: CudaRankBesideACpuRankOnAGpu checks them";
  auto r = runRanks(1, [&](int rank, int n, const hetcclUniqueId& id) {
    for (hetcclDeviceKind_t k : kinds) {
      hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
      cfg.deviceKind = k;
      cfg.timeoutMs = 5000;
      hetcclComm_t comm;
      hetcclResult_t res = hetcclCommInitRank(&comm, n, id, rank, &cfg);
      const char* msg = hetcclGetLastError(nullptr);
      printf("device kind %d init: %s: %s\n", int(k), hetcclGetErrorString(res), msg);
      if (res == hetcclSuccess) { // runtime present, vendor library absent: staging path
        float x = 1;
        res = hetcclAllReduce(&x, &x, 1, hetcclFloat32, hetcclSum, comm);
        msg = hetcclGetLastError(comm);
        printf("device kind %d all-reduce: %s: %s\n", int(k), hetcclGetErrorString(res), msg);
        hetcclCommAbort(comm);
      }
      RCHECK(deviceErrorOk(res, msg, k), "got %s: %s", hetcclGetErrorString(res), msg);
    }
    return 0;
  });
  EXPECT_TRUE(allOk(r));
}

// A CUDA rank and a CPU rank in one communicator: no vendor library
// (mixed kinds), so the CUDA rank stages through host memory with
// cudaMemcpy, which fails without a GPU; both ranks must get an error.
TEST(Devices, MixedCudaAndCpuRanksWithoutAGpuFailCleanly) {
  if (devices(hetcclDeviceCuda) > 0) GTEST_SKIP() << "a CUDA device is present: CudaRankBesideACpuRankOnAGpu checks it";
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.deviceKind = rank == 0 ? hetcclDeviceCuda : hetcclDeviceCpu;
    cfg.timeoutMs = 5000;
    hetcclComm_t comm;
    hetcclResult_t res = hetcclCommInitRank(&comm, n, id, rank, &cfg);
    if (res != hetcclSuccess) { // no runtime installed at all
      printf("mixed: rank %d init: %s: %s\n", rank, hetcclGetErrorString(res), hetcclGetLastError(nullptr));
      return rank == 0 && deviceErrorOk(res, hetcclGetLastError(nullptr), hetcclDeviceCuda) ? 0 : (rank == 1 ? 0 : 1);
    }
    float x = 1;
    res = hetcclAllReduce(&x, &x, 1, hetcclFloat32, hetcclSum, comm);
    printf("mixed: rank %d all-reduce: %s: %s\n", rank, hetcclGetErrorString(res), hetcclGetLastError(comm));
    RCHECK(res != hetcclSuccess, "all-reduce of a host pointer declared as CUDA memory succeeded without a GPU");
    if (rank == 0) RCHECK(deviceErrorOk(res, hetcclGetLastError(comm), hetcclDeviceCuda), "wrong error");
    hetcclCommAbort(comm);
    return 0;
  }, 60);
  EXPECT_TRUE(allOk(r));
}

/// The CUDA runtime calls the test needs for its own device buffers, opened
/// the way hetccl opens them.
struct CudaRuntime {
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, size_t, int) = nullptr; // kind 4: cudaMemcpyDefault
  bool open() {
    for (const char* name : {"libcudart.so", "libcudart.so.13", "libcudart.so.12"})
      if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
        malloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(lib, "cudaMalloc"));
        free = reinterpret_cast<int (*)(void*)>(dlsym(lib, "cudaFree"));
        memcpy = reinterpret_cast<int (*)(void*, const void*, size_t, int)>(dlsym(lib, "cudaMemcpy"));
        return malloc && free && memcpy;
      }
    return false;
  }
};

// The device path: rank 0 holds its vector in CUDA memory, rank 1 on the
// host; the all-reduce stages rank 0's buffer through host memory and both
// get the exact sum (small integers in f32).
TEST(Devices, CudaRankBesideACpuRankOnAGpu) {
  if (devices(hetcclDeviceCuda) <= 0)
    GTEST_SKIP() << "no CUDA device here: scripts/gpu_check.sh runs this on a GPU machine";
  auto r = runRanks(2, [](int rank, int n, const hetcclUniqueId& id) {
    const size_t count = 1 << 16;
    std::vector<float> host(count), expected(count);
    for (size_t i = 0; i < count; ++i) {
      host[i] = float((i + size_t(rank)) % 97);
      expected[i] = float(i % 97) + float((i + 1) % 97);
    }
    hetcclConfig_t cfg = HETCCL_CONFIG_INITIALIZER;
    cfg.deviceKind = rank == 0 ? hetcclDeviceCuda : hetcclDeviceCpu;
    cfg.deviceIndex = rank == 0 ? 0 : -1;
    cfg.timeoutMs = 30000;
    hetcclComm_t comm;
    RCALL(hetcclCommInitRank(&comm, n, id, rank, &cfg));
    CudaRuntime cuda;
    float* buffer = host.data();
    if (rank == 0) {
      RCHECK(cuda.open(), "libcudart lacks cudaMalloc/cudaFree/cudaMemcpy");
      void* device = nullptr;
      RCHECK(cuda.malloc(&device, count * sizeof(float)) == 0, "cudaMalloc failed");
      RCHECK(cuda.memcpy(device, host.data(), count * sizeof(float), 4) == 0, "cudaMemcpy to the device failed");
      buffer = static_cast<float*>(device);
    }
    RCALL(hetcclAllReduce(buffer, buffer, count, hetcclFloat32, hetcclSum, comm));
    if (rank == 0) {
      RCHECK(cuda.memcpy(host.data(), buffer, count * sizeof(float), 4) == 0, "cudaMemcpy to the host failed");
      cuda.free(buffer);
    }
    for (size_t i = 0; i < count; ++i)
      RCHECK(host[i] == expected[i], "element %zu: %g, expected %g", i, host[i], expected[i]);
    hetcclCommDestroy(comm);
    return 0;
  }, 120);
  EXPECT_TRUE(allOk(r));
}

} // namespace
