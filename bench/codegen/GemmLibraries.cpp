//===- GemmLibraries.cpp - the step's matmul shapes in three GEMM libraries -===//
//
// Not a test: a benchmark. Times, on one thread, the matrix products a
// transformer and an MLP training step run (forward x w^T, input gradient
// dy w, weight gradient dy^T x) in oneDNN -- through the matmul primitive
// with strided operands, as libhetrt's hetrt_dnnl_linear does, and through
// dnnl_sgemm, as its attention kernels do -- and in the BLAS libraries a
// Debian machine may have (OpenBLAS, BLIS), opened with dlopen so that a
// missing one is reported rather than a link error. It answers whether a
// second GEMM library, chosen per shape, would make the step faster.
//
//   het-gemm-bench   (run with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
//                     BLIS_NUM_THREADS=1)
//
// GFLOP/s of the median of 15 calls after 3 warm-up calls, hot caches.
//
//===----------------------------------------------------------------------===//

#include <oneapi/dnnl/dnnl.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float *, int, const float *,
                            int, float, float *, int);
constexpr int cblasRowMajor = 101, cblasNoTrans = 111, cblasTrans = 112;

struct Shape {
  const char *name;
  int m, n, k;
  bool transA, transB;
};

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename F> double gflops(double flops, F &&run) {
  for (int i = 0; i < 3; ++i)
    run();
  std::vector<double> times;
  for (int i = 0; i < 15; ++i) {
    double start = seconds();
    run();
    times.push_back(seconds() - start);
  }
  std::sort(times.begin(), times.end());
  return flops / times[times.size() / 2] / 1e9;
}

} // namespace

int main() {
  // make_gpt.py --batch 8 --seq 128 --dim 256 --vocab 4096 (1024 tokens,
  // MLP width 1024) and the 784-1024-1024-10 MLP at batch 256.
  const std::vector<Shape> shapes = {
      {"attn proj x w^T", 1024, 256, 256, false, true},
      {"attn proj dy w", 1024, 256, 256, false, false},
      {"attn proj dy^T x", 256, 256, 1024, true, false},
      {"mlp up x w^T", 1024, 1024, 256, false, true},
      {"mlp up dy w", 1024, 256, 1024, false, false},
      {"mlp up dy^T x", 1024, 256, 1024, true, false},
      {"mlp down x w^T", 1024, 256, 1024, false, true},
      {"mlp down dy w", 1024, 1024, 256, false, false},
      {"mlp down dy^T x", 256, 1024, 1024, true, false},
      {"head x w^T", 1024, 4096, 256, false, true},
      {"head dy w", 1024, 256, 4096, false, false},
      {"head dy^T x", 4096, 256, 1024, true, false},
      {"mlp784 l1 x w^T", 256, 1024, 784, false, true},
      {"mlp784 l1 dy^T x", 1024, 784, 256, true, false},
      {"mlp784 l2 x w^T", 256, 1024, 1024, false, true},
      {"mlp784 l2 dy w", 256, 1024, 1024, false, false},
      {"mlp784 l2 dy^T x", 1024, 1024, 256, true, false},
  };
  std::vector<std::pair<std::string, CblasSgemm>> blas;
  for (const char *library : {"libopenblas.so.0", "libblis.so.4"}) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    auto sgemm = handle ? reinterpret_cast<CblasSgemm>(dlsym(handle, "cblas_sgemm")) : nullptr;
    if (sgemm)
      blas.emplace_back(library, sgemm);
    else
      std::printf("%s: not installed or without cblas_sgemm (skipped)\n", library);
  }

  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("%-17s %5s %5s %5s  %12s %10s", "GFLOP/s", "M", "N", "K", "dnnl matmul",
              "dnnl_sgemm");
  for (const auto &library : blas)
    std::printf(" %17s", library.first.c_str());
  std::printf("\n");
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n), c(size_t(s.m) * s.n);
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(i % 13) * 0.01f;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(i % 7) * 0.02f;
    double flops = 2.0 * s.m * s.n * s.k;
    using dims = dnnl::memory::dims;
    auto f32 = dnnl::memory::data_type::f32;
    dnnl::memory::desc aDesc({s.m, s.k}, f32, s.transA ? dims{1, s.m} : dims{s.k, 1});
    dnnl::memory::desc bDesc({s.k, s.n}, f32, s.transB ? dims{1, s.k} : dims{s.n, 1});
    dnnl::memory::desc cDesc({s.m, s.n}, f32, dims{s.n, 1});
    dnnl::matmul matmul(
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(aDesc, bDesc, cDesc), engine));
    dnnl::memory aMem(aDesc, engine, a.data()), bMem(bDesc, engine, b.data()),
        cMem(cDesc, engine, c.data());
    double primitive = gflops(flops, [&] {
      matmul.execute(stream,
                     {{DNNL_ARG_SRC, aMem}, {DNNL_ARG_WEIGHTS, bMem}, {DNNL_ARG_DST, cMem}});
      stream.wait();
    });
    int lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    double sgemm = gflops(flops, [&] {
      dnnl_sgemm(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.m, s.n, s.k, 1.f, a.data(), lda,
                 b.data(), ldb, 0.f, c.data(), s.n);
    });
    std::printf("%-17s %5d %5d %5d  %12.1f %10.1f", s.name, s.m, s.n, s.k, primitive, sgemm);
    for (const auto &library : blas) {
      CblasSgemm run = library.second;
      std::printf(" %17.1f", gflops(flops, [&] {
                    run(cblasRowMajor, s.transA ? cblasTrans : cblasNoTrans,
                        s.transB ? cblasTrans : cblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), lda,
                        b.data(), ldb, 0.f, c.data(), s.n);
                  }));
    }
    std::printf("\n");
  }
  return 0;
}
