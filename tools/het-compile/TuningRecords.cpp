//===- TuningRecords.cpp - het-compile's uses of the tuning database -------===//

#include "TuningRecords.h"

#include "het/Tune/GemmTuning.h"
#include "het/Tune/TuningDatabase.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

namespace het::compile {

std::string calibrationWorkload(mlir::ModuleOp stepModule, const std::string &library,
                                const std::string &codegen) {
  std::string text;
  llvm::raw_string_ostream os(text);
  stepModule.print(os);
  return llvm::formatv("train step {0:x-} library={1} {2} threads=1 steps=12",
                       llvm::xxh3_64bits(text), library, codegen);
}

llvm::Expected<StepTime> recordedCalibration(const std::string &dbPath,
                                             const std::string &workload,
                                             const std::string &library,
                                             const std::function<llvm::Expected<double>()> &measure) {
  tune::Record record;
  record.kind = "calibration";
  record.workload = workload;
  record.device = "cpu";
  record.host = tune::hostIdentity();
  record.hetVersion = tune::hetVersion();
  record.compiler = "LLVM " LLVM_VERSION_STRING;
  auto warn = [](const tune::DatabaseError &e) {
    llvm::errs() << "het-compile: warning: " << e.what() << "; --plan auto measures without it\n";
  };
  try {
    auto db = tune::TuningDatabase::open(dbPath, tune::TuningDatabase::Mode::ReadOnly);
    for (const tune::Record &found :
         db->find(record.kind, record.workload, record.device, record.host, record.hetVersion))
      if (found.workload == record.workload && found.compiler == record.compiler)
        return StepTime{found.seconds,
                        "from the tuning database " + dbPath + " (measured " + found.measuredAt + ")"};
  } catch (const tune::DatabaseError &e) {
    // A database that does not exist yet is created below.
    if (llvm::sys::fs::exists(dbPath))
      warn(e);
  }
  llvm::Expected<double> seconds = measure();
  if (!seconds)
    return seconds.takeError();
  record.choice = library;
  record.seconds = *seconds;
  record.details = llvm::formatv("{{\"library\": \"{0}\", \"statistic\": \"mean of steps 2-12, "
                                 "one thread\"}",
                                 library);
  record.measuredAt = tune::utcNow();
  try {
    tune::TuningDatabase::open(dbPath, tune::TuningDatabase::Mode::ReadWrite)->put(record);
  } catch (const tune::DatabaseError &e) {
    warn(e);
  }
  return StepTime{*seconds, ""};
}

void chooseGemmEngines(mlir::ModuleOp module, const std::string &dbPath, const std::string &model,
                       bool report) {
  try {
    auto db = tune::TuningDatabase::open(dbPath, tune::TuningDatabase::Mode::ReadOnly);
    tune::GemmChoiceReport chosen = tune::chooseGemmEngines(module, *db);
    if (!report || chosen.products == 0)
      return;
    llvm::errs() << "het-compile: tuning database " << dbPath << ": " << chosen.products
                 << " matrix products of dense layers, " << chosen.onOpenBlas
                 << " on OpenBLAS, the rest on oneDNN\n";
    if (!chosen.unmeasured.empty()) {
      llvm::errs() << "het-compile: no kernel record (oneDNN, as untuned) for "
                   << chosen.unmeasured.size() << " distinct products; het-tune kernels "
                   << model << " --db " << dbPath << " measures them:\n";
      for (const std::string &key : chosen.unmeasured)
        llvm::errs() << "  " << key << "\n";
    }
  } catch (const tune::DatabaseError &e) {
    if (report)
      llvm::errs() << "het-compile: warning: " << e.what()
                   << "; every matrix product runs on oneDNN (untuned)\n";
  }
}

std::shared_ptr<tune::RecordedTilings> recordedTilings(const std::string &dbPath, bool quiet) {
  try {
    auto db = tune::TuningDatabase::open(dbPath, tune::TuningDatabase::Mode::ReadOnly);
    return std::make_shared<tune::RecordedTilings>(*db);
  } catch (const tune::DatabaseError &e) {
    if (!quiet)
      llvm::errs() << "het-compile: warning: " << e.what()
                 << "; generated contractions stay untiled (untuned)\n";
    return nullptr;
  }
}

void reportTilings(const tune::RecordedTilings &tilings, const std::string &dbPath,
                   const std::string &model) {
  std::set<std::string> found = tilings.found(), missing = tilings.missing();
  if (found.empty() && missing.empty())
    return; // no generated contraction in this build
  for (const std::string &record : tilings.unreadable())
    llvm::errs() << "het-compile: warning: tuning database " << dbPath
                 << ": a contraction record's tiling cannot be read, ignored: " << record
                 << "\n";
  llvm::errs() << "het-compile: tuning database " << dbPath << ": " << found.size()
               << " distinct generated contractions tiled as recorded";
  if (missing.empty()) {
    llvm::errs() << "\n";
    return;
  }
  // bf16 contractions (on the dot product) are tuned on the bf16 step.
  bool bf16 = llvm::any_of(missing, [](const std::string &signature) {
    return llvm::StringRef(signature).ends_with(" bf16");
  });
  llvm::errs() << ", " << missing.size()
               << " without a record (untiled loops); het-tune kernels " << model
               << " --library mlir" << (bf16 ? " --precision bf16" : "") << " --db " << dbPath
               << " measures them:\n";
  for (const std::string &signature : missing)
    llvm::errs() << "  " << signature << "\n";
}

} // namespace het::compile
