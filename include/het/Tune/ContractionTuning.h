//===- ContractionTuning.h - tiling generated contractions from measurements -*- C++ -*-===//
//
// het-tune kernels --library mlir times, for each distinct contraction of a
// model's generated (`--library=mlir`, the cpu.mlir kind) step, the
// register tilings het-tile-contractions offers (ContractionTiling.h),
// natively: every candidate and the untiled loops are compiled together by
// het's own LLVM pipeline for this host and run on the same buffers; a
// candidate whose result differs from the untiled loops' in any bit is an
// error, not a record. The fastest goes into the tuning database as a
// "kernel" record keyed by the contraction's signature; het-compile
// --tuning-db reads them back (contractionTilingsFrom). docs/tuning.md has
// the method.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TUNE_CONTRACTIONTUNING_H
#define HET_TUNE_CONTRACTIONTUNING_H

#include "het/Conversion/ContractionTiling.h"
#include "het/Tune/TuningDatabase.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace het::tune {

/// Records describe contractions of this device kind's generated code.
constexpr const char *kContractionDevice = "cpu.mlir";

/// The compiler part of a contraction record's key: the MLIR/LLVM release
/// that generated the code.
std::string contractionCompiler();

/// One distinct contraction of a bufferized step.
struct ContractionCase {
  std::string signature;
  mlir::Operation *op = nullptr; // the first of them (a linalg.generic); valid while its module lives
  int uses = 0;               // contractions in the step with this signature
  double flops = 0;           // 2 x iterations
};

/// The tilable contractions of `bufferized` (the step after one-shot
/// bufferization), one per signature, in first-seen order; `untilable`
/// gets the signatures of the others with why.
std::vector<ContractionCase> distinctContractions(mlir::ModuleOp bufferized,
                                                  std::vector<std::string> *untilable = nullptr);

struct ContractionSweepOptions {
  int rounds = 3;
  double timeBudgetSeconds = 300;     // cases not reached are reported, not recorded
  std::vector<unsigned> widths{16, 8}; // vector widths tried
  /// bf16 contractions run on the AVX512-BF16 dot product (het-compile's
  /// lowering on a CPU that has it): candidates are then checked against
  /// the untiled loops within the sums' reordering, not bit for bit.
  bool bf16Dot = false;
};

struct ContractionSweepResult {
  std::vector<Record> records;
  std::vector<std::string> notReached; // signatures left when the budget ran out
  std::vector<std::string> errors;     // what went wrong (a miscompare is one)
};

/// Times every candidate tiling of each case and records the fastest.
ContractionSweepResult sweepContractions(const std::vector<ContractionCase> &cases,
                                         const ContractionSweepOptions &options,
                                         TuningDatabase &db, std::FILE *log);

/// The tilings `db` holds for this host, het version and compiler, as
/// het-compile's lookup. It remembers the signatures asked for that had no
/// record (several threads may ask at once).
class RecordedTilings {
public:
  explicit RecordedTilings(const TuningDatabase &db);
  std::optional<mlir::het::ContractionTiling> lookup(llvm::StringRef signature);
  size_t recordCount() const { return tilings.size(); }
  /// A digest of every (signature, tiling) it holds, "" when none: what a
  /// key that depends on how contractions are tiled includes.
  std::string fingerprint() const;
  std::set<std::string> found() const;
  std::set<std::string> missing() const;
  /// Records whose tiling could not be read (hand-edited or damaged), each
  /// "signature: choice"; they count as missing.
  const std::vector<std::string> &unreadable() const { return unreadableRecords; }

private:
  std::map<std::string, mlir::het::ContractionTiling, std::less<>> tilings;
  mutable std::mutex mutex;
  std::set<std::string> foundSignatures, missingSignatures;
  std::vector<std::string> unreadableRecords;
};

} // namespace het::tune

#endif
