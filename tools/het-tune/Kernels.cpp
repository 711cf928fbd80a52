//===- Kernels.cpp - het-tune kernels MODEL --db F --------------------------===//
//
// Builds the model's training step (as het-compile does), lists the
// distinct matrix products of its dense layers and times each on every
// engine (lib/Tune/Kernels/GemmSweep.cpp).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "het/Tune/GemmTuning.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

using namespace het::tune;

void addKernelsCommand(CLI::App &app, KernelsCommand &k) {
  k.command = app.add_subcommand(
      "kernels", "time each distinct matrix product of a model's dense layers on oneDNN and "
                 "OpenBLAS; het-compile --tuning-db then runs each on the faster");
  k.command->add_option("model", k.model, "the model (.mlir), as given to het-compile")
      ->required()
      ->check(CLI::ExistingFile);
  k.command->add_option("--db", k.db, "the tuning database (created if missing)")->required();
  k.command->add_option("--threads", k.threads, "thread counts to time at (default 1)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  k.command->add_option("--rounds", k.rounds, "interleaved rounds (default 5)")
      ->check(CLI::Range(1, 100));
  k.command->add_option("--time-budget", k.timeBudget,
                        "seconds; products not reached by then are listed, not recorded "
                        "(default 300)")
      ->check(CLI::PositiveNumber);
}

int runKernels(const KernelsCommand &k, int waitMs) {
  mlir::het::registerHetPasses();
  mlir::het::registerHetTrainingPipeline();
  mlir::DialectRegistry registry;
  mlir::het::registerCodegenDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr; // diagnostics quote the model's lines
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(k.model, sourceMgr, &context);
  if (!module) {
    std::fprintf(stderr, "het-tune: could not parse '%s' (see the diagnostics above)\n",
                 k.model.c_str());
    return 1;
  }
  // The products do not depend on the optimizer; fusion decides which
  // forward products carry an activation.
  mlir::PassManager pm(&context);
  bool hasStep = false;
  for (auto function : module->getOps<mlir::func::FuncOp>())
    hasStep |= function.getName().ends_with("_train_step");
  if (!hasStep && (failed(mlir::parsePassPipeline("het-training-pipeline{fuse=true}", pm,
                                                  llvm::errs())) ||
                   failed(pm.run(*module)))) {
    std::fprintf(stderr, "het-tune: could not build the training step of '%s'\n",
                 k.model.c_str());
    return 1;
  }
  std::vector<GemmProduct> products = distinctGemmProducts(*module);
  if (products.empty()) {
    std::fprintf(stderr, "het-tune: '%s' has no dense layer (het.linear) to tune\n",
                 k.model.c_str());
    return 1;
  }
  auto db = TuningDatabase::open(k.db, TuningDatabase::Mode::ReadWrite, waitMs);
  std::printf("%zu distinct matrix products in %s; on %s, het %s; GFLOP/s of each engine's "
              "best round\n",
              products.size(), k.model.c_str(), hostIdentity().c_str(), hetVersion().c_str());
  std::fflush(stdout);
  GemmSweepOptions options;
  options.threads = k.threads;
  options.rounds = k.rounds;
  options.timeBudgetSeconds = k.timeBudget;
  GemmSweepResult result = sweepGemmProducts(products, options, *db, stdout);
  if (!result.openBlasError.empty())
    std::printf("OpenBLAS not timed: %s\n", result.openBlasError.c_str());
  for (const std::string &key : result.notReached)
    std::printf("not reached within --time-budget %g s: %s\n", k.timeBudget, key.c_str());
  std::printf("%zu records written to %s\n", result.records.size(), k.db.c_str());
  return 0;
}
