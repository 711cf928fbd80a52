//===- GemmSweep.cpp - timing each dense-layer product on every engine -----===//
//
// For each product and thread count: both engines warm up (the first call
// creates oneDNN's primitive and OpenBLAS's buffers), then --rounds rounds
// alternate them, the engine going first rotating per round. A round
// times calls for about 20 ms of work; its time is the median call
// (outliers from interrupts drop out) and an engine's time is its best
// round. After the second round an engine more than 1.5x behind the other
// is dropped: it cannot win. Inputs are fixed pseudo-random values, so
// every run times the same arithmetic.
//
//===----------------------------------------------------------------------===//

#include "het/Tune/GemmTuning.h"

#include "GemmEngines.h"
#include "InterleavedTiming.h"

#include <nlohmann/json.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>

namespace het::tune {

namespace {
using het::rt::GemmEngine;

struct Timing : Timed {
  explicit Timing(GemmEngine engine) : engine(engine) {}
  GemmEngine engine;
};
} // namespace

GemmSweepResult sweepGemmProducts(const std::vector<GemmProduct> &products,
                                  const GemmSweepOptions &options, TuningDatabase &db,
                                  std::FILE *log) {
  GemmSweepResult result;
  std::vector<GemmEngine> engines{GemmEngine::OneDnn};
  if (het::rt::openBlasAvailable(result.openBlasError))
    engines.push_back(GemmEngine::OpenBlas);
  std::string versions = het::rt::gemmLibraryVersions(), host = hostIdentity(), version = hetVersion();
  double start = steadySeconds();
  for (const GemmProduct &product : products) {
    if (steadySeconds() - start > options.timeBudgetSeconds) {
      result.notReached.push_back(product.key());
      continue;
    }
    het::rt::Gemm gemm{product.m, product.n, product.k, product.transA, product.transB};
    std::vector<float> a(size_t(gemm.m * gemm.k)), b(size_t(gemm.k * gemm.n)),
        c(size_t(gemm.m * gemm.n));
    for (size_t i = 0; i < a.size(); ++i)
      a[i] = float(int(i * 2654435761u % 2001) - 1000) * 1e-3f;
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = float(int(i * 40503u % 2001) - 1000) * 1e-3f;
    double flops = 2.0 * double(gemm.m) * double(gemm.n) * double(gemm.k);
    for (int threads : options.threads) {
      omp_set_num_threads(threads);
      std::vector<Timing> timings;
      for (GemmEngine engine : engines) {
        timings.emplace_back(engine);
        for (int i = 0; i < 2; ++i)
          het::rt::runGemm(engine, gemm, a.data(), b.data(), c.data());
      }
      // Calls per round: about 20 ms of work at the first call's speed.
      double first = steadySeconds();
      het::rt::runGemm(GemmEngine::OneDnn, gemm, a.data(), b.data(), c.data());
      int calls = std::clamp(int(0.02 / std::max(steadySeconds() - first, 1e-6)), 3, 200);
      timeInterleaved(timings, options.rounds, calls, /*dropAfter=*/1, /*dropFactor=*/1.5,
                      [&](Timing &t) {
                        het::rt::runGemm(t.engine, gemm, a.data(), b.data(), c.data());
                      });
      const Timing *winner = &timings[0];
      nlohmann::json seconds = nlohmann::json::object(), gflops = nlohmann::json::object();
      for (const Timing &t : timings) {
        seconds[het::rt::gemmEngineName(t.engine)] = t.best;
        gflops[het::rt::gemmEngineName(t.engine)] = std::round(flops / t.best / 1e8) / 10;
        if (t.best < winner->best)
          winner = &t;
      }
      nlohmann::json details = {
          {"seconds", seconds},
          {"gflops", gflops},
          {"rounds", options.rounds},
          {"calls_per_round", calls},
          {"method", "median call of each round, best round; an engine over 1.5x behind "
                     "after two rounds is dropped"}};
      if (!result.openBlasError.empty())
        details["openblas_unavailable"] = result.openBlasError;
      Record record;
      record.kind = "kernel";
      record.workload = product.key() + " threads=" + std::to_string(threads);
      record.device = kGemmDevice;
      record.host = host;
      record.hetVersion = version;
      record.compiler = versions;
      record.choice = het::rt::gemmEngineName(winner->engine);
      record.seconds = winner->best;
      record.details = details.dump();
      record.measuredAt = utcNow();
      db.put(record);
      result.records.push_back(record);
      if (log) {
        std::fprintf(log, "%-40s threads=%d", product.key().c_str(), threads);
        for (const Timing &t : timings)
          std::fprintf(log, "  %s %.1f GFLOP/s%s", het::rt::gemmEngineName(t.engine),
                       flops / t.best / 1e9, t.dropped ? " (dropped)" : "");
        std::fprintf(log, "  -> %s\n", record.choice.c_str());
        std::fflush(log);
      }
    }
  }
  return result;
}

} // namespace het::tune
