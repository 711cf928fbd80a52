//===- ContractionRecords.cpp - a step's contractions and their recorded tilings ===//
//
// What het-tune kernels --library mlir measures (a bufferized step's
// distinct tilable contractions) and what het-compile --tuning-db reads
// back (each signature's recorded tiling). The timing is in
// ContractionSweep.cpp, which needs the JIT; het-compile links only this.
//
//===----------------------------------------------------------------------===//

#include "het/Tune/ContractionTuning.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

namespace het::tune {

std::string contractionCompiler() { return std::string("MLIR ") + HET_MLIR_VERSION; }

std::vector<ContractionCase> distinctContractions(mlir::ModuleOp bufferized,
                                                  std::vector<std::string> *untilable) {
  std::vector<ContractionCase> cases;
  std::map<std::string, size_t> index;
  bufferized.walk([&](mlir::linalg::GenericOp op) {
    // The rest is element-wise work and reductions, which
    // het-tile-contractions never touches; listed are the contractions it
    // turns down.
    if (!mlir::het::isMultiplyAddContraction(op))
      return;
    std::string why;
    if (!mlir::het::isTilableContraction(op, &why)) {
      if (untilable)
        untilable->push_back(mlir::het::contractionSignature(op) + ": " + why);
      return;
    }
    std::string signature = mlir::het::contractionSignature(op);
    auto [it, inserted] = index.try_emplace(signature, cases.size());
    if (inserted) {
      double iterations = 1;
      for (int64_t range : op.getStaticLoopRanges())
        iterations *= double(range);
      cases.push_back({signature, op.getOperation(), 0, 2 * iterations});
    }
    ++cases[it->second].uses;
  });
  return cases;
}

RecordedTilings::RecordedTilings(const TuningDatabase &db) {
  for (const Record &record :
       db.find("kernel", "contraction ", kContractionDevice, hostIdentity(), hetVersion())) {
    if (record.compiler != contractionCompiler())
      continue; // another compiler's code: its best tiling says nothing of ours
    if (auto tiling = mlir::het::ContractionTiling::parse(record.choice))
      tilings.emplace(record.workload, *tiling);
    else
      unreadableRecords.push_back(record.workload + ": '" + record.choice + "'");
  }
}

std::string RecordedTilings::fingerprint() const {
  if (tilings.empty())
    return "";
  std::string text;
  for (const auto &[signature, tiling] : tilings)
    text += signature + "=" + tiling.str() + "\n";
  return llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
}

std::optional<mlir::het::ContractionTiling> RecordedTilings::lookup(llvm::StringRef signature) {
  auto it = tilings.find(signature);
  std::lock_guard<std::mutex> lock(mutex);
  if (it == tilings.end()) {
    missingSignatures.insert(signature.str());
    return std::nullopt;
  }
  foundSignatures.insert(signature.str());
  return it->second;
}

std::set<std::string> RecordedTilings::found() const {
  std::lock_guard<std::mutex> lock(mutex);
  return foundSignatures;
}

std::set<std::string> RecordedTilings::missing() const {
  std::lock_guard<std::mutex> lock(mutex);
  return missingSignatures;
}

} // namespace het::tune
