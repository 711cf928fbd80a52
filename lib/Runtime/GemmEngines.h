//===- GemmEngines.h - one matrix product on oneDNN or OpenBLAS -----*- C++ -*-===//
//
// The dense layers' products (y = x w^T, dx = dy w, dw = dy^T x) run on
// oneDNN's matmul primitive unless the compiler chose OpenBLAS for that
// product from a tuning database (het-tune kernels, docs/tuning.md): on
// AVX2 machines Debian's oneDNN 2.6 runs some of the step's shapes at half
// the speed OpenBLAS does. The choice is made at compile time and written
// into the call, so an executable computes the same bits on every run.
// het-tune times these very functions, so what it measures is what runs.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_GEMMENGINES_H
#define HET_LIB_RUNTIME_GEMMENGINES_H

#include <cstdint>
#include <string>

namespace het::rt {

enum class GemmEngine { OneDnn = 0, OpenBlas = 1 };

/// c[M, N] = op(a) op(b) (+ c when accumulate), f32, row-major and packed:
/// a is [M, K] (or [K, M] when transA), b is [K, N] (or [N, K] when transB).
struct Gemm {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
};

/// Runs the product on `engine`. oneDNN primitives are created once per
/// shape; OpenBLAS is opened on first use (see openBlas()). Threads: the
/// OpenMP threads of the process (the executable's --threads), which both
/// libraries use.
void runGemm(GemmEngine engine, const Gemm &gemm, const float *a, const float *b, float *c,
             bool accumulate = false);

/// Whether OpenBLAS's OpenMP build can be opened; when not, `error` says
/// which file and how to install it.
bool openBlasAvailable(std::string &error);

/// The file opened: Debian's OpenMP build of OpenBLAS (libopenblas0-openmp),
/// so that it shares the OpenMP threads oneDNN and het's loops use instead
/// of starting a second pool that would spin against them.
const char *openBlasPath();

const char *gemmEngineName(GemmEngine engine);

/// "oneDNN 2.6.3, OpenBLAS 0.3.21 DYNAMIC_ARCH ... Zen": the libraries'
/// versions and the kernel set OpenBLAS picked for this CPU (without
/// OpenBLAS, oneDNN's alone). het-tune keys its records with it.
std::string gemmLibraryVersions();

} // namespace het::rt

#endif
