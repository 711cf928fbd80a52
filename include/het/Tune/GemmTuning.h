//===- GemmTuning.h - measuring and choosing each product's GEMM engine -*- C++ -*-===//
//
// het-tune kernels times every distinct dense-layer product of a model on
// each engine libhetrt has (oneDNN's matmul primitive, OpenBLAS) at the
// thread counts asked, and records one "kernel" record per product and
// thread count. het-compile --tuning-db reads them back and marks each
// product with the engine that was faster in total over the thread counts
// measured (GemmProducts.h). docs/tuning.md has the method and the key.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TUNE_GEMMTUNING_H
#define HET_TUNE_GEMMTUNING_H

#include "het/Tune/GemmProducts.h"
#include "het/Tune/TuningDatabase.h"

#include <cstdio>
#include <string>
#include <vector>

namespace het::tune {

/// Records describe products for this device kind: the oneDNN build's.
constexpr const char *kGemmDevice = "cpu.onednn";

struct GemmSweepOptions {
  std::vector<int> threads{1};
  int rounds = 5;
  double timeBudgetSeconds = 300; // products not reached are reported, not recorded
};

struct GemmSweepResult {
  std::vector<Record> records;          // written to the database
  std::vector<std::string> notReached;  // products left when the budget ran out
  std::string openBlasError;            // why OpenBLAS was not timed ("" when it was)
};

/// Times `products` and puts a record per product and thread count into
/// `db`; prints a line per measurement to `log`.
GemmSweepResult sweepGemmProducts(const std::vector<GemmProduct> &products,
                                  const GemmSweepOptions &options, TuningDatabase &db,
                                  std::FILE *log);

struct GemmChoiceReport {
  int products = 0;                  // dense-layer products in the module
  int onOpenBlas = 0;                // of which OpenBLAS was chosen for
  std::vector<std::string> unmeasured; // distinct keys without a record
};

/// Sets kGemmEnginesAttr on every dense layer of `module` from `db`'s
/// records for this host and het version.
GemmChoiceReport chooseGemmEngines(mlir::ModuleOp module, const TuningDatabase &db);

} // namespace het::tune

#endif
