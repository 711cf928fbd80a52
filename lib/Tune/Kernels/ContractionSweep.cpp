//===- ContractionSweep.cpp - timing every tiling of each contraction natively ===//
//
// Per contraction: one module holds the untiled loops and every candidate
// tiling, each a function of the contraction's three buffers, lowered by
// the passes het-compile runs (het-tile-contractions, linalg to loops, the
// vector, memref and func conversions with bare-pointer buffers) and
// optimised by het's own LLVM pipeline for this host (lib/Target), then
// compiled in memory (MLIR's ExecutionEngine, ORC). All run on the same
// fixed pseudo-random inputs.
//
// Each candidate first runs once from a zero output and must reproduce the
// untiled loops' output bit for bit (the tiling keeps every sum's order and
// uses no fused multiply-add), else it is an error and not timed. A bf16
// contraction on the dot product adds each pair's products in another
// order: it must agree within 1e-4 of the output's largest magnitude (the
// reordering of sums of values in [-1, 1] moves the last bits; a pair
// misaligned by one k moves the first). Then
// --rounds rounds time every candidate still in, the first candidate
// rotating per round; a round runs a candidate for about 10 ms and takes
// its median call; a candidate's time is its best round. After the first
// round, candidates over 1.3x behind the best are dropped: they cannot win.
//
//===----------------------------------------------------------------------===//

#include "het/Tune/ContractionTuning.h"

#include "het/Conversion/Passes.h"
#include "het/Target/NativeCodegen.h"

#include "InterleavedTiming.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace het::tune {

namespace {

using KernelFn = void (*)(float *, float *, float *);

/// A module with the untiled contraction (@untiled) and one function per
/// candidate (@t0, @t1, ...), each taking the three buffers.
mlir::OwningOpRef<mlir::ModuleOp>
buildCandidateModule(mlir::linalg::GenericOp op,
                     const std::vector<mlir::het::ContractionTiling> &candidates) {
  mlir::MLIRContext *context = op.getContext();
  mlir::OpBuilder b(context);
  mlir::Location loc = mlir::UnknownLoc::get(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto function = [&](const std::string &name, const mlir::het::ContractionTiling *tiling) {
    // Identity-laid-out buffers of the operands' shapes: the benchmark
    // owns them (isTilableContraction wants the strides it checks static).
    llvm::SmallVector<mlir::Type> types;
    for (mlir::Type type : op->getOperandTypes()) {
      auto memref = mlir::cast<mlir::MemRefType>(type);
      types.push_back(mlir::MemRefType::get(memref.getShape(), memref.getElementType()));
    }
    auto func = b.create<mlir::func::FuncOp>(loc, name, b.getFunctionType(types, {}));
    mlir::Block *entry = func.addEntryBlock();
    mlir::OpBuilder body = mlir::OpBuilder::atBlockEnd(entry);
    mlir::IRMapping mapping;
    for (auto [operand, argument] : llvm::zip(op->getOperands(), entry->getArguments()))
      mapping.map(operand, argument);
    mlir::Operation *clone = body.clone(*op, mapping);
    clone->setLoc(loc);
    clone->removeAttr("het.contraction_tiling");
    if (tiling)
      clone->setAttr("het.contraction_tiling", body.getStringAttr(tiling->str()));
    body.create<mlir::func::ReturnOp>(loc);
  };
  function("untiled", nullptr);
  for (size_t i = 0; i < candidates.size(); ++i)
    function("t" + std::to_string(i), &candidates[i]);
  return module;
}

/// The lowering het-compile gives a step's contractions, up to the LLVM
/// dialect (lib/Conversion/Pipeline.cpp's tail).
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module, bool bf16Dot) {
  mlir::PassManager pm(module.getContext());
  pm.addNestedPass<mlir::func::FuncOp>(mlir::het::createTileContractionsPass({}, {}, bf16Dot));
  pm.addNestedPass<mlir::func::FuncOp>(mlir::createConvertLinalgToLoopsPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertSCFToCFPass());
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  pm.addPass(mlir::createLowerAffinePass());
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(mlir::createArithToLLVMConversionPass());
  pm.addPass(mlir::createConvertIndexToLLVMPass());
  mlir::ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(mlir::createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  return pm.run(module);
}

/// Compiles `module` for this host with het's optimisation pipeline.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>> compile(mlir::ModuleOp module) {
  llvm::Expected<het::target::NativeTarget> target = het::target::hostTarget("native", '2');
  if (!target)
    return target.takeError();
  mlir::ExecutionEngineOptions options;
  het::target::NativeTarget native = *target;
  // ExecutionEngineOptions holds a function_ref: the callable must outlive create().
  auto optimize = [native](llvm::Module *llvmModule) -> llvm::Error {
    auto machine = het::target::createTargetMachine(native);
    if (!machine)
      return machine.takeError();
    het::target::optimizeModule(*llvmModule, **machine, native.optLevel);
    return llvm::Error::success();
  };
  options.transformer = optimize;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Default;
  return mlir::ExecutionEngine::create(module, options);
}

struct Buffers {
  std::vector<std::vector<float>> inputs;
  std::vector<float> output;
};

Buffers makeBuffers(mlir::linalg::GenericOp op) {
  Buffers buffers;
  unsigned seed = 0;
  for (mlir::Value input : op.getDpsInputs()) {
    auto type = mlir::cast<mlir::MemRefType>(input.getType());
    std::vector<float> values(size_t(type.getNumElements()));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = float(int((i + seed) * 2654435761u % 2001) - 1000) * 1e-3f;
    if (type.getElementType().isBF16()) {
      // 16-bit inputs: the same values truncated to bf16, packed at the
      // front of the (twice large enough) buffer.
      auto *bits = reinterpret_cast<uint16_t *>(values.data());
      for (size_t i = 0; i < values.size(); ++i) {
        uint32_t word;
        std::memcpy(&word, &values[i], sizeof word);
        bits[i] = uint16_t(word >> 16);
      }
    }
    buffers.inputs.push_back(std::move(values));
    seed += 7919;
  }
  buffers.output.assign(
      size_t(mlir::cast<mlir::MemRefType>(op.getDpsInits()[0].getType()).getNumElements()), 0.f);
  return buffers;
}

struct Candidate : Timed {
  Candidate(mlir::het::ContractionTiling tiling, KernelFn function)
      : tiling(tiling), function(function) {}
  mlir::het::ContractionTiling tiling;
  KernelFn function = nullptr;
};

/// The candidates' module (buildCandidateModule), lowered and compiled.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
compileCandidates(mlir::linalg::GenericOp op,
                  const std::vector<mlir::het::ContractionTiling> &tilings, bool bf16Dot) {
  mlir::OwningOpRef<mlir::ModuleOp> module = buildCandidateModule(op, tilings);
  if (failed(lowerToLLVMDialect(*module, bf16Dot)))
    return llvm::createStringError("could not lower them");
  return compile(*module);
}

KernelFn lookupKernel(mlir::ExecutionEngine &engine, const std::string &name) {
  auto address = engine.lookup(name);
  if (!address) {
    llvm::consumeError(address.takeError());
    return nullptr;
  }
  return reinterpret_cast<KernelFn>(*address);
}

/// Whether `got` is `expected`: bit for bit, or with `reordered` sums
/// within 1e-4 of the largest magnitude.
bool reproduces(const std::vector<float> &got, const std::vector<float> &expected,
                bool reordered) {
  if (!reordered)
    return std::memcmp(got.data(), expected.data(), expected.size() * sizeof(float)) == 0;
  float largest = 0;
  for (float value : expected)
    largest = std::max(largest, std::fabs(value));
  for (size_t i = 0; i < expected.size(); ++i)
    if (!(std::fabs(got[i] - expected[i]) <= 1e-4f * largest))
      return false;
  return true;
}

/// The compiled candidates (@t0, @t1, ... of `engine`) that reproduce
/// `expected` from a zero output (reproduces()); the others are errors.
std::vector<Candidate> checkedCandidates(mlir::ExecutionEngine &engine,
                                         const std::vector<mlir::het::ContractionTiling> &tilings,
                                         Buffers &buffers, const std::vector<float> &expected,
                                         bool reordered, const std::string &signature,
                                         std::vector<std::string> &errors) {
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < tilings.size(); ++i) {
    Candidate candidate{tilings[i], lookupKernel(engine, "t" + std::to_string(i))};
    if (!candidate.function) {
      errors.push_back("no function for " + tilings[i].str() + " of " + signature);
      continue;
    }
    std::fill(buffers.output.begin(), buffers.output.end(), 0.f);
    candidate.function(buffers.inputs[0].data(), buffers.inputs[1].data(), buffers.output.data());
    if (!reproduces(buffers.output, expected, reordered)) {
      errors.push_back("tiling " + tilings[i].str() + " of " + signature +
                       (reordered ? " does not reproduce the untiled result within 1e-4"
                                  : " does not reproduce the untiled result bit for bit"));
      continue;
    }
    candidates.push_back(candidate);
  }
  return candidates;
}

} // namespace

ContractionSweepResult sweepContractions(const std::vector<ContractionCase> &cases,
                                         const ContractionSweepOptions &options,
                                         TuningDatabase &db, std::FILE *log) {
  ContractionSweepResult result;
  std::string host = hostIdentity(), version = hetVersion(), compiler = contractionCompiler();
  if (!cases.empty()) {
    // The candidates are translated to LLVM IR in the cases' context.
    mlir::MLIRContext *context = cases.front().op->getContext();
    mlir::registerBuiltinDialectTranslation(*context);
    mlir::registerLLVMDialectTranslation(*context);
  }
  double start = steadySeconds();
  for (const ContractionCase &c : cases) {
    if (steadySeconds() - start > options.timeBudgetSeconds) {
      result.notReached.push_back(c.signature);
      continue;
    }
    auto op = mlir::cast<mlir::linalg::GenericOp>(c.op);
    std::vector<mlir::het::ContractionTiling> tilings =
        mlir::het::contractionTilingCandidates(op, options.widths);
    double compileStart = steadySeconds();
    bool reordered = options.bf16Dot &&
                     mlir::cast<mlir::MemRefType>(op.getDpsInputs()[0].getType())
                         .getElementType()
                         .isBF16();
    auto engine = compileCandidates(op, tilings, options.bf16Dot);
    if (!engine) {
      result.errors.push_back("could not compile the candidates of " + c.signature + ": " +
                              llvm::toString(engine.takeError()));
      continue;
    }
    double compileSeconds = steadySeconds() - compileStart;

    Buffers buffers = makeBuffers(op);
    float *a = buffers.inputs[0].data(), *b = buffers.inputs[1].data();
    KernelFn untiled = lookupKernel(**engine, "untiled");
    if (!untiled) {
      result.errors.push_back("no untiled function for " + c.signature);
      continue;
    }
    std::vector<float> reference(buffers.output.size(), 0.f);
    double first = steadySeconds();
    untiled(a, b, reference.data());
    double untiledSeconds = steadySeconds() - first;
    // What every candidate must reproduce (`reference` itself is reused
    // below to time the untiled loops, which add into it).
    const std::vector<float> expected = reference;

    std::vector<Candidate> candidates =
        checkedCandidates(**engine, tilings, buffers, expected, reordered, c.signature,
                          result.errors);
    if (candidates.empty())
      continue;

    // Calls per round: about 10 ms at the untiled loops' speed / 4.
    int calls = std::clamp(int(0.04 / std::max(untiledSeconds, 1e-7)), 1, 1000);
    timeInterleaved(candidates, options.rounds, calls, /*dropAfter=*/0, /*dropFactor=*/1.3,
                    [&](Candidate &k) { k.function(a, b, buffers.output.data()); });
    // Untiled, timed the same way (for the record: what tuning gained).
    double untiledBest = untiledSeconds;
    for (int call = 0; call < std::min(calls, 3); ++call) {
      double begin = steadySeconds();
      untiled(a, b, reference.data());
      untiledBest = std::min(untiledBest, steadySeconds() - begin);
    }

    const Candidate *winner = &candidates[0];
    nlohmann::json seconds = nlohmann::json::object(), dropped = nlohmann::json::array();
    for (const Candidate &k : candidates) {
      seconds[k.tiling.str()] = k.best;
      if (k.dropped)
        dropped.push_back(k.tiling.str());
      if (k.best < winner->best)
        winner = &k;
    }

    // Stage 2: cache blocks of the outermost reduction on the three best
    // register tilings (what a block changes -- how often each tile's
    // inputs come from L2 rather than further out -- is apart from the
    // registers, so the product of the two lists need not be timed), timed
    // against the best of stage 1 in rounds of their own.
    std::vector<const Candidate *> ranked;
    for (const Candidate &k : candidates)
      if (!k.dropped)
        ranked.push_back(&k);
    std::sort(ranked.begin(), ranked.end(),
              [](const Candidate *x, const Candidate *y) { return x->best < y->best; });
    ranked.resize(std::min<size_t>(ranked.size(), 3));
    std::vector<mlir::het::ContractionTiling> bestTilings;
    for (const Candidate *k : ranked)
      bestTilings.push_back(k->tiling);
    std::vector<mlir::het::ContractionTiling> blockedTilings =
        mlir::het::reductionBlockCandidates(op, bestTilings);
    std::unique_ptr<mlir::ExecutionEngine> blockedEngine;
    std::vector<Candidate> blocked;
    if (!blockedTilings.empty()) {
      double blockedCompileStart = steadySeconds();
      auto compiled = compileCandidates(op, blockedTilings, options.bf16Dot);
      if (!compiled) {
        result.errors.push_back("could not compile the cache-blocked candidates of " + c.signature +
                                ": " + llvm::toString(compiled.takeError()));
      } else {
        blockedEngine = std::move(*compiled);
        compileSeconds += steadySeconds() - blockedCompileStart;
        blocked.push_back(Candidate{winner->tiling, winner->function}); // stage 1's best, again
        for (const Candidate &k : checkedCandidates(*blockedEngine, blockedTilings, buffers,
                                                    expected, reordered, c.signature,
                                                    result.errors))
          blocked.push_back(k);
        timeInterleaved(blocked, options.rounds, calls, /*dropAfter=*/0, /*dropFactor=*/1.3,
                        [&](Candidate &k) { k.function(a, b, buffers.output.data()); });
        // A blocked tiling wins only against stage 1's best timed in the
        // same rounds.
        const Candidate *best = &blocked[0];
        for (const Candidate &k : blocked) {
          if (&k != &blocked[0]) {
            seconds[k.tiling.str()] = k.best;
            if (k.dropped)
              dropped.push_back(k.tiling.str());
          }
          if (k.best < best->best)
            best = &k;
        }
        if (best != &blocked[0])
          winner = best;
      }
    }
    nlohmann::json details = {
        {"seconds", seconds},
        {"untiled_seconds", untiledBest},
        {"gflops", std::round(c.flops / winner->best / 1e8) / 10},
        {"untiled_gflops", std::round(c.flops / untiledBest / 1e8) / 10},
        {"candidates", candidates.size() + (blocked.empty() ? 0 : blocked.size() - 1)},
        {"dropped_after_first_round", dropped},
        {"rounds", options.rounds},
        {"calls_per_round", calls},
        {"compile_seconds", std::round(compileSeconds * 100) / 100},
        {"method", "each candidate checked bitwise against the untiled loops; median call of "
                   "each round, best round; a candidate over 1.3x behind after the first round "
                   "is dropped; cache blocks of the outermost reduction on the three best "
                   "register tilings, timed against the best of them in rounds of their own"}};
    Record record;
    record.kind = "kernel";
    record.workload = c.signature;
    record.device = kContractionDevice;
    record.host = host;
    record.hetVersion = version;
    record.compiler = compiler;
    record.choice = winner->tiling.str();
    record.seconds = winner->best;
    record.details = details.dump();
    record.measuredAt = utcNow();
    db.put(record);
    result.records.push_back(record);
    if (log) {
      std::fprintf(log,
                   "%s (x%d)\n  untiled %.2f GFLOP/s; %zu tilings (compiled in %.1f s); best "
                   "%.2f GFLOP/s (%.1fx): %s\n",
                   c.signature.c_str(), c.uses, c.flops / untiledBest / 1e9, candidates.size(),
                   compileSeconds, c.flops / winner->best / 1e9, untiledBest / winner->best,
                   record.choice.c_str());
      std::fflush(log);
    }
  }
  return result;
}

} // namespace het::tune
