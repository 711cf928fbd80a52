//===- CublasGemm.cpp - the matrix products of GPU steps on cuBLAS ---------===//
//
// het-gpu-contractions-to-cublas replaces each matrix product of a step
// compiled for an NVIDIA GPU by a call here:
//
//   c[batch][m][n] += op(a)[batch][m][k] * op(b)[batch][k][n]  (row-major)
//
// c is f32; a and b are f32 (hetrt_cublas_sgemm: FP32 arithmetic, so the
// results match the CPU build's; hetrt_cublas_gemm_tf32: the TF32 tensor
// cores, --precision tf32) or both bf16 or both f16 (hetrt_cublas_gemm_bf16
// and _f16, mixed precision: tensor cores, f32 sums, as cuBLAS runs
// PyTorch's CUDA autocast products).
//
// On a GPU process (the driver started): cuBLAS, opened with dlopen
// (libcublas.so.13 or .12, or $HET_CUBLAS_LIBRARY) on the process's stream:
// cublasSgemm, or cublasGemmEx with CUBLAS_COMPUTE_32F (16-bit inputs) or
// CUBLAS_COMPUTE_32F_FAST_TF32. Row-major products are column-major ones
// transposed: c^T = op(b)^T op(a)^T. The stream is synchronized after the
// call, as after every launch, so host code that follows (messages,
// collectives) sees the product.
//
// In a host emulation (--gpu-emulate: no driver) the same call runs
// oneDNN's sgemm on the host (16-bit operands widened first, which is
// exact; TF32 operands rounded to TF32's 10-bit mantissa first), so the
// emulated step checks the call's arguments (transposes, leading
// dimensions, accumulation, formats) against the CPU build; only a GPU run
// checks cuBLAS itself.
//
//===----------------------------------------------------------------------===//

#include "GpuDriverImpl.h"
#include "Types/DataType.h" // hetccl: the 16-bit conversions

#include "oneapi/dnnl/dnnl.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
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
// cudaDataType_t (library_types.h), cublasComputeType_t, cublasGemmAlgo_t.
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;
constexpr int kCompute32F = 68, kCompute32FFastTf32 = 77, kGemmDefault = -1;

/// The operands' format of one entry point.
enum class Operands { F32, Tf32, Bf16, F16 };

struct Cublas {
  Status (*create)(Handle *) = nullptr;
  Status (*setStream)(Handle, void *) = nullptr;
  Status (*sgemm)(Handle, int, int, int, int, int, const float *, const float *, int, const float *,
                  int, const float *, float *, int) = nullptr;
  Status (*sgemmStridedBatched)(Handle, int, int, int, int, int, const float *, const float *, int,
                                long long, const float *, int, long long, const float *, float *,
                                int, long long, int) = nullptr;
  Status (*gemmEx)(Handle, int, int, int, int, int, const void *, const void *, int, int,
                   const void *, int, int, const void *, void *, int, int, int, int) = nullptr;
  Status (*gemmStridedBatchedEx)(Handle, int, int, int, int, int, const void *, const void *, int,
                                 int, long long, const void *, int, int, long long, const void *,
                                 void *, int, int, long long, int, int, int) = nullptr;
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
    bind(library.gemmEx, "cublasGemmEx");
    bind(library.gemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
    library.statusString =
        reinterpret_cast<const char *(*)(Status)>(dlsym(handle, "cublasGetStatusString"));
    library.check(library.create(&library.handle), "cublasCreate_v2");
    library.check(library.setStream(library.handle, driver.stream()), "cublasSetStream_v2");
  });
  return library;
}

/// `count` operands of `format` as f32 on the host, for the emulation.
std::vector<float> widened(const void *data, int64_t count, Operands format) {
  std::vector<float> wide(static_cast<size_t>(count));
  const auto *bits = static_cast<const uint16_t *>(data);
  for (int64_t i = 0; i < count; ++i) {
    if (format == Operands::Bf16) {
      wide[i] = hetccl::bf16ToFloat(bits[i]);
    } else if (format == Operands::F16) {
      wide[i] = hetccl::halfToFloat(bits[i]);
    } else { // TF32: the f32 value rounded to 10 mantissa bits, to nearest even
      uint32_t x;
      std::memcpy(&x, static_cast<const float *>(data) + i, 4);
      if ((x & 0x7f800000u) != 0x7f800000u)
        x = (x + 0xfffu + ((x >> 13) & 1u)) & ~0x1fffu;
      std::memcpy(&wide[i], &x, 4);
    }
  }
  return wide;
}

void emulate(int64_t batch, bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const void *a, const void *b, float *c, Operands format) {
  int64_t lda = transposeA ? m : k, ldb = transposeB ? k : n, ldc = n;
  std::vector<float> wideA, wideB;
  const float *fa = static_cast<const float *>(a), *fb = static_cast<const float *>(b);
  if (format != Operands::F32) {
    wideA = widened(a, batch * m * k, format);
    wideB = widened(b, batch * k * n, format);
    fa = wideA.data();
    fb = wideB.data();
  }
  for (int64_t i = 0; i < batch; ++i) {
    dnnl_status_t status =
        dnnl_sgemm(transposeA ? 'T' : 'N', transposeB ? 'T' : 'N', m, n, k, 1.0f, fa + i * m * k,
                   lda, fb + i * k * n, ldb, 1.0f, c + i * m * n, ldc);
    if (status != dnnl_success)
      fail("dnnl_sgemm failed emulating a cuBLAS product (status " + std::to_string(status) + ")");
  }
}

void gemm(int64_t batch, int64_t transposeA, int64_t transposeB, int64_t m, int64_t n, int64_t k,
          const void *a, const void *b, float *c, Operands format) {
  Driver *driver = active();
  if (!driver)
    return emulate(batch, transposeA, transposeB, m, n, k, a, b, c, format);
  if (driver->vendor() != Vendor::Nvidia)
    fail("a cuBLAS product called in a process running on an AMD GPU");
  Cublas &library = cublas(*driver);
  int64_t lda = transposeA ? m : k, ldb = transposeB ? k : n, ldc = n;
  const float one = 1.0f;
  int opA = transposeA ? kOpT : kOpN, opB = transposeB ? kOpT : kOpN;
  if (format == Operands::F32) {
    if (batch == 1)
      library.check(library.sgemm(library.handle, opB, opA, n, m, k, &one,
                                  static_cast<const float *>(b), ldb,
                                  static_cast<const float *>(a), lda, &one, c, ldc),
                    "cublasSgemm_v2");
    else
      library.check(library.sgemmStridedBatched(library.handle, opB, opA, n, m, k, &one,
                                                static_cast<const float *>(b), ldb, k * n,
                                                static_cast<const float *>(a), lda, m * k, &one,
                                                c, ldc, m * n, batch),
                    "cublasSgemmStridedBatched");
  } else {
    int type = format == Operands::Bf16 ? kR16BF : format == Operands::F16 ? kR16F : kR32F;
    int compute = format == Operands::Tf32 ? kCompute32FFastTf32 : kCompute32F;
    if (batch == 1)
      library.check(library.gemmEx(library.handle, opB, opA, n, m, k, &one, b, type, ldb, a, type,
                                   lda, &one, c, kR32F, ldc, compute, kGemmDefault),
                    "cublasGemmEx");
    else
      library.check(library.gemmStridedBatchedEx(library.handle, opB, opA, n, m, k, &one, b, type,
                                                 ldb, k * n, a, type, lda, m * k, &one, c, kR32F,
                                                 ldc, m * n, batch, compute, kGemmDefault),
                    "cublasGemmStridedBatchedEx");
  }
  driver->synchronize(driver->stream());
}

} // namespace

extern "C" void hetrt_cublas_sgemm(int64_t batch, int64_t transposeA, int64_t transposeB, int64_t m,
                                   int64_t n, int64_t k, const float *a, const float *b, float *c) {
  gemm(batch, transposeA, transposeB, m, n, k, a, b, c, Operands::F32);
}

extern "C" void hetrt_cublas_gemm_tf32(int64_t batch, int64_t transposeA, int64_t transposeB,
                                       int64_t m, int64_t n, int64_t k, const float *a,
                                       const float *b, float *c) {
  gemm(batch, transposeA, transposeB, m, n, k, a, b, c, Operands::Tf32);
}

extern "C" void hetrt_cublas_gemm_bf16(int64_t batch, int64_t transposeA, int64_t transposeB,
                                       int64_t m, int64_t n, int64_t k, const uint16_t *a,
                                       const uint16_t *b, float *c) {
  gemm(batch, transposeA, transposeB, m, n, k, a, b, c, Operands::Bf16);
}

extern "C" void hetrt_cublas_gemm_f16(int64_t batch, int64_t transposeA, int64_t transposeB,
                                      int64_t m, int64_t n, int64_t k, const uint16_t *a,
                                      const uint16_t *b, float *c) {
  gemm(batch, transposeA, transposeB, m, n, k, a, b, c, Operands::F16);
}
