//===- GemmEngines.cpp - one matrix product on oneDNN or OpenBLAS ---------===//
//
// See GemmEngines.h. OpenBLAS is opened with dlopen, not linked: only an
// executable compiled with a tuning database that chose it needs it, and a
// machine without it gets an error naming the package, not a loader error
// for every executable.
//
//===----------------------------------------------------------------------===//

#include "GemmEngines.h"
#include "MatmulPadding.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <dlfcn.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace het::rt {
namespace {

using dims = dnnl::memory::dims;

struct OneDnnProduct {
  dnnl::memory::desc a, b, c;
  dnnl::matmul primitive;
  // A row-major b whose rows alias in the L1 (MatmulPadding.h): the
  // primitive reads `padded`, a copy of it with longer rows.
  dnnl::memory::desc padded;
  dnnl::reorder pad;
  std::unique_ptr<void, decltype(&std::free)> copy{nullptr, &std::free};
};

dnnl::engine &engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// The matmul primitive of one shape, with het's buffers as strided plain
/// memory (a transposed operand is a stride swap, no copy), created once per
/// thread count (a oneDNN primitive keeps the thread count it was created
/// with; het-tune times one shape at several).
OneDnnProduct &oneDnnProduct(const Gemm &g, bool accumulate) {
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool, bool, int>, OneDnnProduct>
      cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(g.m, g.n, g.k, g.transA, g.transB, accumulate, omp_get_max_threads());
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;
  auto f32 = dnnl::memory::data_type::f32;
  OneDnnProduct p;
  p.a = dnnl::memory::desc({g.m, g.k}, f32, g.transA ? dims{1, g.m} : dims{g.k, 1});
  p.b = dnnl::memory::desc({g.k, g.n}, f32, g.transB ? dims{1, g.k} : dims{g.n, 1});
  p.c = dnnl::memory::desc({g.m, g.n}, f32, dims{g.n, 1});
  dnnl::memory::desc read = p.b;
  if (!g.transB)
    if (int64_t stride = paddedRowStride(g.k, g.n, sizeof(float))) {
      p.padded = read = dnnl::memory::desc({g.k, g.n}, f32, dims{stride, 1});
      p.pad = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), p.b, engine(), p.padded));
      p.copy.reset(std::aligned_alloc(64, (p.padded.get_size() + 63) / 64 * 64));
    }
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops post;
    post.append_sum(1.0f);
    attr.set_post_ops(post);
  }
  p.primitive = dnnl::matmul(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(p.a, read, p.c), attr, engine()));
  return cache.emplace(key, std::move(p)).first->second;
}

void runOneDnn(const Gemm &g, const float *a, const float *b, float *c, bool accumulate) {
  OneDnnProduct &p = oneDnnProduct(g, accumulate);
  static dnnl::stream stream(engine());
  // oneDNN's memory objects take non-const handles; the inputs are read only.
  dnnl::memory am(p.a, engine(), const_cast<float *>(a)), bm(p.b, engine(), const_cast<float *>(b)),
      cm(p.c, engine(), c);
  if (p.copy) {
    dnnl::memory padded(p.padded, engine(), p.copy.get());
    p.pad.execute(stream, {{DNNL_ARG_FROM, bm}, {DNNL_ARG_TO, padded}});
    bm = padded;
  }
  p.primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float *, int, const float *,
                            int, float, float *, int);
constexpr int cblasRowMajor = 101, cblasNoTrans = 111, cblasTrans = 112;

struct OpenBlas {
  CblasSgemm sgemm = nullptr;
  const char *(*config)() = nullptr; // openblas_get_config
  std::string error;
};

const OpenBlas &openBlas() {
  static const OpenBlas library = [] {
    OpenBlas l;
    void *handle = dlopen(openBlasPath(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      l.error = std::string("cannot open ") + openBlasPath() + " (" + (why ? why : "?") +
                "): install Debian's libopenblas0-openmp (scripts/setup.sh --runtime does)";
      return l;
    }
    l.sgemm = reinterpret_cast<CblasSgemm>(dlsym(handle, "cblas_sgemm"));
    l.config = reinterpret_cast<const char *(*)()>(dlsym(handle, "openblas_get_config"));
    if (!l.sgemm)
      l.error = std::string(openBlasPath()) + " has no cblas_sgemm";
    return l;
  }();
  return library;
}

} // namespace

const char *openBlasPath() {
  // Overridable for machines whose OpenBLAS lives elsewhere (and for the
  // test of a missing library).
  if (const char *path = std::getenv("HETRT_OPENBLAS"))
    return path;
  return "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0";
}

bool openBlasAvailable(std::string &error) {
  error = openBlas().error;
  return error.empty();
}

std::string gemmLibraryVersions() {
  const dnnl_version_t *v = dnnl_version();
  std::string text = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                     std::to_string(v->patch);
  if (openBlas().config)
    text += std::string(", ") + openBlas().config();
  return text;
}

const char *gemmEngineName(GemmEngine engine) {
  return engine == GemmEngine::OpenBlas ? "openblas" : "onednn";
}

void runGemm(GemmEngine engine, const Gemm &g, const float *a, const float *b, float *c,
             bool accumulate) {
  if (engine == GemmEngine::OneDnn) {
    runOneDnn(g, a, b, c, accumulate);
    return;
  }
  const OpenBlas &blas = openBlas();
  if (!blas.sgemm) {
    // Compiled to call OpenBLAS and it is gone: stop before the first step
    // computes anything, naming what is missing.
    std::fprintf(stderr, "error: a matrix product chosen for OpenBLAS: %s\n",
                 blas.error.c_str());
    std::exit(1);
  }
  int lda = static_cast<int>(g.transA ? g.m : g.k), ldb = static_cast<int>(g.transB ? g.k : g.n);
  blas.sgemm(cblasRowMajor, g.transA ? cblasTrans : cblasNoTrans,
             g.transB ? cblasTrans : cblasNoTrans, static_cast<int>(g.m), static_cast<int>(g.n),
             static_cast<int>(g.k), 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c,
             static_cast<int>(g.n));
}

} // namespace het::rt
