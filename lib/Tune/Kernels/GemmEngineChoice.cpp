//===- GemmEngineChoice.cpp - each product's engine from the database ------===//
//
// A product runs on OpenBLAS when the records of its key (one per thread
// count het-tune kernels measured) say OpenBLAS took at least 3% less time
// in total; otherwise, and wherever there is no record, on oneDNN, as
// untuned. The
// choice is written into the IR, so an executable does what it was
// compiled to do on every run (no timing at run time, no run-to-run
// difference in results).
//
//===----------------------------------------------------------------------===//

#include "het/Tune/GemmTuning.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace het::tune {

namespace {
/// OpenBLAS replaces the default only when it is faster by more than a
/// round-to-round difference on a quiet machine: near-ties would otherwise
/// flip with every sweep, and each flip changes the executable's bits for
/// nothing.
constexpr double kSwitchMargin = 0.97;

/// Whether the records of one product favour OpenBLAS.
bool openBlasFaster(const std::vector<Record> &records) {
  double oneDnn = 0, openBlas = 0;
  int both = 0;
  for (const Record &record : records) {
    auto details = nlohmann::json::parse(record.details, nullptr, /*allow_exceptions=*/false);
    if (!details.is_object() || !details.contains("seconds"))
      continue;
    const auto &seconds = details["seconds"];
    if (!seconds.contains("onednn") || !seconds.contains("openblas") ||
        !seconds["onednn"].is_number() || !seconds["openblas"].is_number())
      continue;
    oneDnn += seconds["onednn"].get<double>();
    openBlas += seconds["openblas"].get<double>();
    ++both;
  }
  return both > 0 && openBlas < kSwitchMargin * oneDnn;
}
} // namespace

GemmChoiceReport chooseGemmEngines(mlir::ModuleOp module, const TuningDatabase &db) {
  GemmChoiceReport report;
  std::string host = hostIdentity(), version = hetVersion();
  std::map<std::string, bool> verdicts; // key -> OpenBLAS; one lookup per distinct product
  std::set<std::string> unmeasured;
  module.walk([&](mlir::Operation *op) {
    std::vector<GemmProduct> products = gemmProducts(op);
    if (products.empty())
      return;
    int64_t bits = 0;
    for (const GemmProduct &product : products) {
      ++report.products;
      std::string key = product.key();
      auto it = verdicts.find(key);
      if (it == verdicts.end()) {
        auto records = db.find("kernel", key + " threads=", kGemmDevice, host, version);
        if (records.empty())
          unmeasured.insert(key);
        it = verdicts.emplace(key, openBlasFaster(records)).first;
      }
      if (it->second && product.openBlasAllowed) {
        bits |= int64_t(1) << product.bit;
        ++report.onOpenBlas;
      }
    }
    if (bits)
      op->setAttr(kGemmEnginesAttr, mlir::Builder(op->getContext()).getI64IntegerAttr(bits));
    else
      op->removeAttr(kGemmEnginesAttr);
  });
  report.unmeasured.assign(unmeasured.begin(), unmeasured.end());
  return report;
}

} // namespace het::tune
