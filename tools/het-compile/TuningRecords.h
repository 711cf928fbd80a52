//===- TuningRecords.h - het-compile's uses of the tuning database -*- C++ -*-===//
//
// --tuning-db F: --plan auto's calibrations are looked up and recorded
// there, each dense layer's matrix products take the GEMM engine het-tune
// kernels measured faster and each generated contraction the register
// tiling het-tune kernels --library mlir measured fastest (docs/tuning.md). An unusable database
// is a warning and untuned behaviour, never a failure.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TOOLS_HET_COMPILE_TUNINGRECORDS_H
#define HET_TOOLS_HET_COMPILE_TUNINGRECORDS_H

#include "AutoPlan.h"

#include "het/Tune/ContractionTuning.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>

namespace het::compile {

/// The workload key of a calibration: the training step's IR hash, the
/// kernel library and the code generation options (`codegen`).
std::string calibrationWorkload(mlir::ModuleOp stepModule, const std::string &library,
                                const std::string &codegen);

/// A calibration measured before -- the same workload on this host, by this
/// het and LLVM -- from `dbPath`; else `measure()`, recorded there.
llvm::Expected<StepTime> recordedCalibration(const std::string &dbPath,
                                             const std::string &workload,
                                             const std::string &library,
                                             const std::function<llvm::Expected<double>()> &measure);

/// Marks each dense layer of `module` with its products' GEMM engines from
/// `dbPath`; with `report`, says how many went to OpenBLAS and which
/// products had no record (het-tune kernels `model` measures them), or why
/// the database could not be read.
void chooseGemmEngines(mlir::ModuleOp module, const std::string &dbPath,
                       const std::string &model, bool report);

/// The contraction tilings `dbPath` records for this host, or null (with a
/// warning unless `quiet`) when it cannot be read.
std::shared_ptr<tune::RecordedTilings> recordedTilings(const std::string &dbPath,
                                                       bool quiet = false);

/// Says how many of the build's generated contractions had a record and
/// lists those that had none.
void reportTilings(const tune::RecordedTilings &tilings, const std::string &dbPath,
                   const std::string &model);

} // namespace het::compile

#endif
