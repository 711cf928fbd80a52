//===- DnnlProductRates.cpp - oneDNN's f32 and bf16 matrix-product rates -===//
//
// See DnnlProductRates.h.
//
//===----------------------------------------------------------------------===//

#include "DnnlProductRates.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace het::rt {
namespace {

constexpr int64_t kM = 256, kK = 1024, kN = 1024;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Product {
  dnnl::matmul primitive;
  dnnl::memory a, b, c;
  std::string kernel;
};

Product makeProduct(dnnl::engine &engine, dnnl::memory::data_type input) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc a({kM, kK}, input, tag::ab), b({kK, kN}, input, tag::ab),
      c({kM, kN}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
  Product p{dnnl::matmul(pd), dnnl::memory(a, engine), dnnl::memory(b, engine),
            dnnl::memory(c, engine), pd.impl_info_str()};
  // Small values, the same bits in both formats (zeros are exact in bf16).
  for (dnnl::memory *m : {&p.a, &p.b}) {
    size_t bytes = m->get_desc().get_size();
    std::fill_n(static_cast<unsigned char *>(m->get_data_handle()), bytes, 0);
  }
  return p;
}

/// GFLOP/s of `calls` products.
double rate(Product &p, dnnl::stream &stream, int calls) {
  double t0 = now();
  for (int i = 0; i < calls; ++i)
    p.primitive.execute(stream, {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}});
  stream.wait();
  return 2.0 * kM * kN * kK * calls / (now() - t0) / 1e9;
}

} // namespace

DnnlProductRates measureDnnlProductRates(double seconds) {
  DnnlProductRates rates;
  // One thread, as the multiply-add peaks: the ratio is the core's.
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    Product f32 = makeProduct(engine, dnnl::memory::data_type::f32);
    Product bf16;
    bool hasBf16 = true;
    try {
      bf16 = makeProduct(engine, dnnl::memory::data_type::bf16);
      rates.bf16Kernel = bf16.kernel;
    } catch (const dnnl::error &) {
      hasBf16 = false; // no bf16 matmul implementation on this CPU
    }
    rate(f32, stream, 1); // first calls: JIT and caches
    if (hasBf16)
      rate(bf16, stream, 1);
    // Calls per measurement: about a sixth of the budget at the f32 rate
    // (three rounds of one or two).
    double t0 = now();
    rate(f32, stream, 1);
    int calls = std::clamp(int(seconds / 6 / std::max(now() - t0, 1e-6)), 1, 10000);
    for (int round = 0; round < 3; ++round) {
      rates.f32Gflops = std::max(rates.f32Gflops, rate(f32, stream, calls));
      if (hasBf16)
        rates.bf16Gflops = std::max(rates.bf16Gflops, rate(bf16, stream, calls));
    }
  } catch (const dnnl::error &) {
    // No oneDNN CPU engine: both stay 0 and the caller keeps f32.
  }
  omp_set_num_threads(threads);
  return rates;
}

} // namespace het::rt
