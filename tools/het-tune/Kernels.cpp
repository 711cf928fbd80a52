//===- Kernels.cpp - het-tune kernels MODEL --db F [--library dnnl|mlir] ----===//
//
// Builds the model's training step (as het-compile does), then either lists
// the distinct matrix products of its dense layers and times each on every
// GEMM engine (--library dnnl, lib/Tune/Kernels/GemmSweep.cpp) or lowers it
// with generated kernels to buffers and times every tiling of each distinct
// contraction (--library mlir, ContractionSweep.cpp).
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "het/Conversion/Passes.h"
#include "het/Dialect/Het/Transforms/Passes.h"
#include "het/Support/MultiplyAddPeaks.h"
#include "het/Tune/ContractionTuning.h"
#include "het/Tune/GemmTuning.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <set>

using namespace het::tune;

void addKernelsCommand(CLI::App &app, KernelsCommand &k) {
  k.command = app.add_subcommand(
      "kernels", "--library dnnl: time each distinct matrix product of a model's dense layers "
                 "on oneDNN and OpenBLAS; --library mlir: time the register tilings of each "
                 "distinct generated contraction (matmul, linear, convolution); het-compile "
                 "--tuning-db then uses the fastest");
  k.command->add_option("model", k.model, "the model (.mlir), as given to het-compile")
      ->required()
      ->check(CLI::ExistingFile);
  k.command->add_option("--db", k.db, "the tuning database (created if missing)")->required();
  k.command
      ->add_option("--library", k.library,
                   "dnnl (default): GEMM engines of the oneDNN build (cpu.onednn); mlir: "
                   "tilings of the generated build's contractions (cpu.mlir, one thread)")
      ->check(CLI::IsMember({"dnnl", "mlir"}));
  k.command
      ->add_option("--batch", k.batches,
                   "--library mlir: batch sizes to tune the step at (het-rebatch), e.g. a "
                   "pipeline stage's shares of its micro-batch (default: the model's)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  k.command
      ->add_option("--precision", k.precision,
                   "--library mlir: fp32 (default), or bf16: the contractions of the bf16 "
                   "step (het-compile --precision bf16 --bf16-products native), which pair "
                   "their products on the AVX512-BF16 dot product")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  k.command->add_option("--threads", k.threads,
                        "--library dnnl: thread counts to time at (default 1)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  k.command->add_option("--rounds", k.rounds,
                        "interleaved rounds (default 5 for dnnl, 3 for mlir)")
      ->check(CLI::Range(1, 100));
  k.command->add_option("--time-budget", k.timeBudget,
                        "seconds; products not reached by then are listed, not recorded "
                        "(default 300)")
      ->check(CLI::PositiveNumber);
}

namespace {

/// --library mlir: the step lowered with generated kernels to buffers (as
/// het-compile lowers it, up to where het-tile-contractions runs), its
/// distinct contractions timed with every tiling.
int tuneContractions(const KernelsCommand &k, llvm::ArrayRef<mlir::ModuleOp> steps, int waitMs) {
  std::vector<ContractionCase> cases;
  std::set<std::string> signatures, untilableSeen;
  for (mlir::ModuleOp module : steps) {
    mlir::PassManager pm(module.getContext());
    mlir::het::CpuPipelineOptions lowering;
    lowering.library = mlir::het::KernelLibrary::Mlir;
    lowering.generatedBf16Products = k.precision == "bf16";
    mlir::het::buildHetToBuffersPipeline(pm, lowering);
    if (failed(pm.run(module))) {
      std::fprintf(stderr, "het-tune: could not lower '%s' with generated kernels\n",
                   k.model.c_str());
      return 1;
    }
    std::vector<std::string> untilable;
    for (ContractionCase &c : distinctContractions(module, &untilable))
      if (signatures.insert(c.signature).second)
        cases.push_back(c);
    for (const std::string &why : untilable)
      if (untilableSeen.insert(why).second)
        std::printf("not tilable, left to linalg loops: %s\n", why.c_str());
  }
  if (cases.empty()) {
    std::fprintf(stderr,
                 "het-tune: '%s' has no generated contraction (matmul, linear, conv2d) to "
                 "tune\n",
                 k.model.c_str());
    return 1;
  }
  auto db = TuningDatabase::open(k.db, TuningDatabase::Mode::ReadWrite, waitMs);
  std::printf("%zu distinct contractions in %s (generated kernels); on %s, het %s, %s; one "
              "thread\n",
              cases.size(), k.model.c_str(), hostIdentity().c_str(), hetVersion().c_str(),
              contractionCompiler().c_str());
  std::fflush(stdout);
  ContractionSweepOptions options;
  options.bf16Dot = k.precision == "bf16";
  if (k.rounds > 0)
    options.rounds = k.rounds;
  options.timeBudgetSeconds = k.timeBudget;
  ContractionSweepResult result = sweepContractions(cases, options, *db, stdout);
  for (const std::string &signature : result.notReached)
    std::printf("not reached within --time-budget %g s: %s\n", k.timeBudget, signature.c_str());
  for (const std::string &error : result.errors)
    std::fprintf(stderr, "het-tune: %s\n", error.c_str());
  std::printf("%zu records written to %s\n", result.records.size(), k.db.c_str());
  return result.errors.empty() ? 0 : 1;
}

} // namespace

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
  // forward products carry an activation. With --batch, one step per batch
  // size (het-rebatch first): a pipeline stage's share of a micro-batch.
  bool hasStep = false;
  for (auto function : module->getOps<mlir::func::FuncOp>())
    hasStep |= function.getName().ends_with("_train_step");
  if (hasStep && !k.batches.empty()) {
    std::fprintf(stderr,
                 "het-tune: --batch rebatches a forward model, and '%s' is a training step\n",
                 k.model.c_str());
    return 1;
  }
  auto buildStep = [&](mlir::ModuleOp step, int64_t batch) {
    if (hasStep)
      return true;
    std::string pipeline = "het-training-pipeline{fuse=true precision=" + k.precision + "}";
    if (batch > 0)
      pipeline = "het-rebatch{samples=" + std::to_string(batch) + "}," + pipeline;
    mlir::PassManager pm(&context);
    if (failed(mlir::parsePassPipeline(pipeline, pm, llvm::errs())) || failed(pm.run(step))) {
      std::fprintf(stderr, "het-tune: could not build the training step of '%s'%s\n",
                   k.model.c_str(),
                   batch > 0 ? (" at batch " + std::to_string(batch)).c_str() : "");
      return false;
    }
    return true;
  };
  if (k.library == "mlir") {
    if (k.precision == "bf16" && !::het::support::hasBf16DotProduct()) {
      std::fprintf(stderr, "het-tune: --precision bf16 tunes contractions on the AVX512-BF16 dot "
                           "product, and this CPU has none\n");
      return 1;
    }
    if (hasStep && k.precision != "fp32") {
      std::fprintf(stderr, "het-tune: --precision applies to a forward model, and '%s' is a "
                           "training step (its formats are set)\n",
                   k.model.c_str());
      return 1;
    }
    std::vector<mlir::OwningOpRef<mlir::ModuleOp>> steps;
    std::vector<int64_t> batches = k.batches;
    if (batches.empty())
      batches.push_back(0); // the model's own
    for (int64_t batch : batches) {
      steps.push_back(mlir::OwningOpRef<mlir::ModuleOp>(module->clone()));
      if (!buildStep(*steps.back(), batch))
        return 1;
    }
    llvm::SmallVector<mlir::ModuleOp> views;
    for (auto &step : steps)
      views.push_back(*step);
    return tuneContractions(k, views, waitMs);
  }
  if (!k.batches.empty() || k.precision != "fp32") {
    std::fprintf(stderr, "het-tune: --%s is for --library mlir\n",
                 k.batches.empty() ? "precision" : "batch");
    return 1;
  }
  if (!buildStep(*module, 0))
    return 1;
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
  options.rounds = k.rounds > 0 ? k.rounds : 5;
  options.timeBudgetSeconds = k.timeBudget;
  GemmSweepResult result = sweepGemmProducts(products, options, *db, stdout);
  if (!result.openBlasError.empty())
    std::printf("OpenBLAS not timed: %s\n", result.openBlasError.c_str());
  for (const std::string &key : result.notReached)
    std::printf("not reached within --time-budget %g s: %s\n", k.timeBudget, key.c_str());
  std::printf("%zu records written to %s\n", result.records.size(), k.db.c_str());
  return 0;
}
