//===- het-eval.cpp - run het functions with the reference evaluator ------===//
//
//   het-eval model.mlir [--function F] [--inputs in.npz] [--input KEY=x.npy]
//            [--random-inputs SEED] [--precision f32|f64|f80] [--steps N]
//            [-o out.npz] [--print]
//   het-eval model.mlir --check-gradients [--function F] [--samples K]
//            [--tolerance 1e-6] [--fd-step 1e-6]
//
// Arguments and results are keyed by their `het.name` (else arg<i> /
// result<i>). With --steps, results are fed back into the arguments of the
// same name, which is how a training step from het-autodiff trains.
//
//===----------------------------------------------------------------------===//

#include "GradientCheck.h"

#include "het/Dialect/Het/IR/HetDialect.h"
#include "het/Dialect/Het/IR/HetNames.h"
#include "het/Eval/Evaluator.h"
#include "het/Eval/Npy.h"
#include "het/Eval/RandomInputs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir;
namespace cl = llvm::cl;
using ::het::eval::HostArray;

namespace {

cl::OptionCategory category("het-eval options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.mlir>"), cl::Required,
                               cl::cat(category));
cl::opt<std::string> functionName("function",
                                  cl::desc("function to run (default: the only one, or the "
                                           "only *_train_step with --steps)"),
                                  cl::cat(category));
cl::opt<std::string> inputsNpz("inputs", cl::desc("arguments from an .npz (keys = names)"),
                               cl::value_desc("file.npz"), cl::cat(category));
cl::list<std::string> inputNpys("input", cl::desc("one argument from an .npy: KEY=file.npy"),
                                cl::value_desc("KEY=file.npy"), cl::cat(category));
cl::opt<long long> randomSeed("random-inputs",
                              cl::desc("fill arguments not given with deterministic "
                                       "random values from this seed"),
                              cl::init(-1), cl::value_desc("seed"), cl::cat(category));
cl::opt<std::string> precisionName("precision",
                                   cl::desc("working precision: f32 (default), f64, or f80 "
                                            "(x87 extended)"),
                                   cl::init("f32"), cl::cat(category));
cl::opt<unsigned> steps("steps",
                        cl::desc("run N times, feeding each named result back into the "
                                 "argument of the same name; prints the loss per step"),
                        cl::init(0), cl::cat(category));
cl::opt<unsigned> firstStep("first-step",
                            cl::desc("the training step het.dropout draws its masks for (with "
                                     "--steps: the first one's; default 0)"),
                            cl::init(0), cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("write the results to an .npz"),
                                cl::value_desc("out.npz"), cl::cat(category));
cl::opt<bool> printResults("print", cl::desc("print every result (shape and values)"),
                           cl::cat(category));
cl::opt<bool> checkGradients("check-gradients",
                             cl::desc("compare het-autodiff's gradients with central "
                                      "finite differences (80-bit extended precision)"),
                             cl::cat(category));
cl::opt<unsigned> samples("samples",
                          cl::desc("gradient check: elements checked per parameter"),
                          cl::init(16), cl::cat(category));
cl::opt<double> fdStep("fd-step", cl::desc("gradient check: finite-difference step h"),
                       cl::init(1e-6), cl::cat(category));
cl::opt<double> tolerance("tolerance",
                          cl::desc("gradient check: largest relative error accepted"),
                          cl::init(1e-6), cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "het-eval: " << message << "\n";
  return 1;
}

/// Arguments for `function`: from files, zeros for optimizer state, random
/// values when asked; a missing one is an error listing all missing names.
FailureOr<std::vector<HostArray>> gatherArguments(func::FuncOp function,
                                                  std::map<std::string, HostArray> &given) {
  // An input that matches nothing is most likely a misspelt name: say so
  // before complaining about what is missing.
  for (const auto &[key, array] : given) {
    bool used = false;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      used |= mlir::het::argumentName(function, i) == key;
    if (!used) {
      fail("input '" + key + "' matches no argument of @" + function.getSymName());
      return failure();
    }
  }
  std::vector<HostArray> arguments;
  std::vector<std::string> missing;
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    std::string key = mlir::het::argumentName(function, i);
    auto it = given.find(key);
    if (it != given.end()) {
      arguments.push_back(it->second);
      continue;
    }
    bool isState = static_cast<bool>(function.getArgAttr(i, mlir::het::HetDialect::getStateAttrName()));
    if (isState || randomSeed >= 0) {
      arguments.push_back(::het::eval::randomArgument(function, i,
                                                    static_cast<uint64_t>(std::max(0LL, randomSeed.getValue()))));
      continue;
    }
    missing.push_back(key);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string &key : missing)
      list += (list.empty() ? "" : ", ") + key;
    fail("@" + function.getSymName() + " needs arguments that were not given: " + list +
         " (use --inputs, --input KEY=file.npy or --random-inputs SEED)");
    return failure();
  }
  return arguments;
}

void print(const std::string &key, const HostArray &array) {
  llvm::outs() << key << ": " << array.describe() << " =";
  int64_t count = array.numElements();
  for (int64_t i = 0; i < count && i < 64; ++i) {
    if (array.isInteger())
      llvm::outs() << " " << array.integers[i];
    else
      llvm::outs() << " " << llvm::format("%.9g", static_cast<double>(array.floats[i]));
  }
  llvm::outs() << (count > 64 ? " ...\n" : "\n");
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "het reference evaluator: runs a het function on .npy/.npz data with plain loops\n");

  ::het::eval::Precision precision;
  if (precisionName == "f32")
    precision = ::het::eval::Precision::F32;
  else if (precisionName == "f64")
    precision = ::het::eval::Precision::F64;
  else if (precisionName == "f80")
    precision = ::het::eval::Precision::Extended;
  else
    return fail("--precision must be f32, f64 or f80, got '" + precisionName + "'");

  DialectRegistry registry;
  registry.insert<mlir::het::HetDialect, func::FuncDialect, arith::ArithDialect,
                  math::MathDialect>();
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false); // the location says where; a dump of the function does not help
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1; // the parser has reported where

  if (checkGradients)
    return ::het::tools::runGradientChecks(*module, functionName, samples, tolerance,
                                         static_cast<uint64_t>(std::max(0LL, randomSeed.getValue())),
                                         inputsNpz, fdStep);

  func::FuncOp function;
  if (!functionName.empty()) {
    function = module->lookupSymbol<func::FuncOp>(functionName);
    if (!function)
      return fail("no function @" + functionName + " in " + inputFile);
  } else {
    SmallVector<func::FuncOp> candidates;
    for (auto f : module->getOps<func::FuncOp>())
      if (!f.isExternal() && (steps == 0 || f.getSymName().ends_with("_train_step")))
        candidates.push_back(f);
    if (candidates.size() != 1) {
      std::string names;
      for (auto f : module->getOps<func::FuncOp>())
        names += " @" + f.getSymName().str();
      return fail("choose a function with --function; the module has" + names);
    }
    function = candidates.front();
  }

  std::map<std::string, HostArray> given;
  if (!inputsNpz.empty()) {
    auto arrays = ::het::eval::readNpz(inputsNpz);
    if (!arrays)
      return fail(llvm::toString(arrays.takeError()));
    for (auto &[key, array] : *arrays)
      given[key] = std::move(array);
  }
  for (const std::string &spec : inputNpys) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--input expects KEY=file.npy, got '" + spec + "'");
    auto array = ::het::eval::readNpy(spec.substr(eq + 1));
    if (!array)
      return fail(llvm::toString(array.takeError()));
    given[spec.substr(0, eq)] = std::move(*array);
  }
  auto arguments = gatherArguments(function, given);
  if (failed(arguments))
    return 1;

  std::vector<HostArray> results;
  unsigned runs = std::max(1u, steps.getValue());
  int lossIndex = -1;
  for (unsigned r = 0; r < function.getNumResults(); ++r)
    if (mlir::het::resultName(function, r) == "loss")
      lossIndex = static_cast<int>(r);
  if (steps > 0 && lossIndex < 0)
    return fail("--steps needs a result named 'loss' (run het-autodiff first)");
  for (unsigned step = 0; step < runs; ++step) {
    ::het::eval::RandomContext random;
    random.step = firstStep + step; // het.dropout draws a new mask each training step
    auto out = ::het::eval::evaluate(function, *arguments, precision, random);
    if (failed(out))
      return 1;
    results = std::move(*out);
    if (steps == 0)
      break;
    // 9 significant digits round-trip a float, 17 a double.
    llvm::outs() << "step " << step << " loss "
                 << llvm::format(precision == ::het::eval::Precision::F32 ? "%.9g" : "%.17g",
                                 static_cast<double>(results[lossIndex].floats[0]))
                 << "\n";
    for (unsigned r = 0; r < results.size(); ++r) {
      std::string key = mlir::het::resultName(function, r);
      for (unsigned a = 0; a < function.getNumArguments(); ++a)
        if (mlir::het::argumentName(function, a) == key)
          (*arguments)[a] = results[r];
    }
  }

  if (printResults || outputFile.empty())
    for (unsigned r = 0; r < results.size() && (printResults || steps == 0); ++r)
      print(mlir::het::resultName(function, r), results[r]);
  if (!outputFile.empty()) {
    ::het::eval::NamedArrays named;
    for (unsigned r = 0; r < results.size(); ++r)
      named.emplace_back(mlir::het::resultName(function, r), results[r]);
    if (llvm::Error error = ::het::eval::writeNpz(outputFile, named))
      return fail(llvm::toString(std::move(error)));
  }
  return 0;
}
