//===- CublasGemm.cpp - the matrix products of GPU steps on cuBLAS ---------===//
//
// het-gpu-contractions-to-cublas replaces each f32 matrix product of a step
// compiled for an NVIDIA GPU by a call here:
//
//   c[batch][m][n] += op(a)[batch][m][k] * op(b)[batch][k][n]  (row-major)
//
// On a GPU process (the driver started): cuBLAS, opened with dlopen
// (libcublas.so.13 or .12, or $HET_CUBLAS_LIBRARY) on the process's stream,
// in FP32 (no TF32: the results must match the CPU build's). Row-major
// products are column-major ones transposed: c^T = op(b)^T op(a)^T. The
// stream is synchronized after the call, as after every launch, so host
// code that follows (messages, collectives) sees the product.
//
// In a host emulation (--gpu-emulate: no driver) the same call runs
// oneDNN's sgemm on the host, so the emulated step checks the call's
// arguments (transposes, leading dimensions, accumulation) against the CPU
// build; only a GPU run checks cuBLAS itself.
//
//===----------------------------------------------------------------------===//

#include "GpuDriverImpl.h"

#include "oneapi/dnnl/dnnl.h"

#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <type_traits>

using namespace het::rt::gpu;

namespace {

// cuBLAS's C API, declared here: the toolkit's headers are not needed to
// build libhetrt.
using Handle = void *;
using Status = int;
constexpr int kOpN = 0, kOpT = 1;

struct Cublas {
  Status (*create)(Handle *) = nullptr;
  Status (*setStream)(Handle, void *) = nullptr;
  Status (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, const float *,
                  int, const float *, float *, int) = nullptr;
  Status (*sgemmStridedBatched)(Handle, int, int, int, int, int, const float *, const float *, int,
                                long long, const float *, int, long long, const float *, float *,
                                int, long long, int) = nullptr;
  const char *(*statusString)(Status) = nullptr;
  Handle handle = nullptr;

  void check(Status status, const char *call) const {
    if (status == 0)
      return;
    std::string text = statusString ? statusString(status) : "";
    fail(std::string(call) + " failed: " + (text.empty() ? "status" : text) + " (" +
         std::to_string(status) + ")");
  }
};

Cublas &cublas(Driver &driver) {
  static Cublas library;
  static std::once_flag opened;
  std::call_once(opened, [&] {
    const char *override = std::getenv("HET_CUBLAS_LIBRARY");
    void *handle = nullptr;
    std::string tried;
    for (const char *name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      const char *path = override && *override ? override : name;
      handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
      const char *why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (why ? why : path);
      if (override && *override)
        break;
    }
    if (!handle)
      fail("this step's matrix products run on cuBLAS, which could not be loaded: " + tried +
           " (install the CUDA toolkit's or PyTorch's cuBLAS, name it with $HET_CUBLAS_LIBRARY, "
           "or compile with --gpu-libraries=generated)");
    auto bind = [&](auto &function, const char *symbol) {
      function =
          reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(handle, symbol));
      if (!function)
        fail(std::string("cuBLAS lacks ") + symbol);
    };
    bind(library.create, "cublasCreate_v2");
    bind(library.setStream, "cublasSetStream_v2");
    bind(library.sgemm, "cublasSgemm_v2");
    bind(library.sgemmStridedBatched, "cublasSgemmStridedBatched");
    library.statusString =
        reinterpret_cast<const char *(*)(Status)>(dlsym(handle, "cublasGetStatusString"));
    library.check(library.create(&library.handle), "cublasCreate_v2");
    library.check(library.setStream(library.handle, driver.stream()), "cublasSetStream_v2");
  });
  return library;
}

} // namespace

extern "C" void hetrt_cublas_sgemm(int64_t batch, int64_t transposeA, int64_t transposeB, int64_t m,
                                   int64_t n, int64_t k, const float *a, const float *b, float *c) {
  int64_t lda = transposeA ? m : k, ldb = transposeB ? k : n, ldc = n;
  Driver *driver = active();
  if (!driver) {
    // Host emulation: the same product on the host.
    for (int64_t i = 0; i < batch; ++i) {
      dnnl_status_t status =
          dnnl_sgemm(transposeA ? 'T' : 'N', transposeB ? 'T' : 'N', m, n, k, 1.0f, a + i * m * k,
                     lda, b + i * k * n, ldb, 1.0f, c + i * m * n, ldc);
      if (status != dnnl_success)
        fail("dnnl_sgemm failed emulating hetrt_cublas_sgemm (status " + std::to_string(status) +
             ")");
    }
    return;
  }
  if (driver->vendor() != Vendor::Nvidia)
    fail("hetrt_cublas_sgemm called in a process running on an AMD GPU");
  Cublas &library = cublas(*driver);
  const float one = 1.0f;
  int opA = transposeA ? kOpT : kOpN, opB = transposeB ? kOpT : kOpN;
  if (batch == 1)
    library.check(
        library.sgemm(library.handle, opB, opA, n, m, k, &one, b, ldb, a, lda, &one, c, ldc),
        "cublasSgemm_v2");
  else
    library.check(library.sgemmStridedBatched(library.handle, opB, opA, n, m, k, &one, b, ldb,
                                              k * n, a, lda, m * k, &one, c, ldc, m * n, batch),
                  "cublasSgemmStridedBatched");
  driver->synchronize(driver->stream());
}
