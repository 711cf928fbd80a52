//===- ParallelCodegen.cpp - optimise and emit units on several threads ----===//
//
// LLVM's optimiser and code generator are the bulk of het-compile's time,
// and they are single-threaded per module. Split per function
// (ModuleSplitting.cpp), each unit is read into its own LLVMContext on a
// worker thread, optimised and emitted with its own target machine; its
// object comes from the cache when the same unit was compiled before.
// Optimising per unit gives up inlining across units, which the outlined
// layers (het-outline-layers) never wanted: each is large and called from
// glue.
//
//===----------------------------------------------------------------------===//

#include "het/Target/NativeCodegen.h"

#include "ModuleSplitting.h"
#include "ObjectCache.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"

#include <atomic>
#include <mutex>

using namespace het::target;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The target a unit is compiled for: glue at -O0.
NativeTarget targetOf(const CodegenUnit &unit, NativeTarget target) {
  if (unit.glue)
    target.optLevel = '0';
  return target;
}

/// Optimises and emits one unit's bitcode into `objectPath`.
llvm::Error compileUnit(const CodegenUnit &unit, const NativeTarget &wholeTarget,
                        const std::string &objectPath) {
  NativeTarget target = targetOf(unit, wholeTarget);
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(unit.bitcode.data(), unit.bitcode.size()), "unit"),
      context);
  if (!module)
    return module.takeError();
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine = createTargetMachine(target);
  if (!machine)
    return machine.takeError();
  optimizeModule(**module, **machine, target.optLevel);
  std::error_code code;
  llvm::ToolOutputFile object(objectPath, code, llvm::sys::fs::OF_None);
  if (code)
    return error("cannot write '" + objectPath + "': " + code.message());
  if (llvm::Error failure = emitObject(**module, **machine, object.os()))
    return failure;
  object.os().close();
  if (object.os().has_error())
    return error("cannot write '" + objectPath + "': " + object.os().error().message());
  object.keep();
  return llvm::Error::success();
}

/// `from` at `to`: a hard link where the file system allows (the cache
/// entry may be pruned by another compiler before the link), else a copy.
std::error_code placeAt(const std::string &from, const std::string &to) {
  if (!llvm::sys::fs::create_hard_link(from, to))
    return {};
  return llvm::sys::fs::copy_file(from, to);
}

} // namespace

llvm::Expected<std::vector<std::string>>
het::target::emitObjectsInParallel(llvm::Module &module, const NativeTarget &target,
                                   const ParallelCodegenOptions &options,
                                   const std::string &scratchDirectory,
                                   ParallelCodegenReport &report) {
  report.functions = countDefinedFunctions(module);
  std::vector<CodegenUnit> units = splitByFunction(module);
  report.units = units.size();
  ObjectCache cache(options.cacheDirectory, target);
  if (!options.cacheDirectory.empty() && !cache.usable())
    report.cacheProblem = cache.problem();

  std::vector<std::string> objects(units.size());
  for (unsigned i = 0; i < units.size(); ++i) {
    llvm::SmallString<256> path(scratchDirectory);
    llvm::sys::path::append(path, "unit" + std::to_string(i) + ".o");
    objects[i] = path.str().str();
  }
  std::vector<std::string> failures(units.size());
  std::atomic<unsigned> fromCache{0};
  llvm::ThreadPoolStrategy strategy = llvm::hardware_concurrency(options.jobs);
  report.threads = std::min<unsigned>(strategy.compute_thread_count(), units.size());
  {
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(report.threads));
    for (unsigned i = 0; i < units.size(); ++i)
      pool.async([&, i] {
        auto fail = [&](llvm::Error failure) {
          failures[i] = "unit " + std::to_string(i) + " (" + units[i].functions.front() +
                        (units[i].functions.size() > 1 ? ", ..." : "") +
                        "): " + llvm::toString(std::move(failure));
        };
        if (!cache.usable()) {
          if (llvm::Error failure = compileUnit(units[i], target, objects[i]))
            fail(std::move(failure));
          return;
        }
        std::string key = cache.key(units[i].bitcode, units[i].glue ? "glue -O0" : "");
        if (std::optional<std::string> cached = cache.lookup(key)) {
          if (!placeAt(*cached, objects[i])) {
            ++fromCache;
            return;
          }
        }
        llvm::Expected<std::string> temporary = cache.temporaryPath();
        if (!temporary)
          return fail(temporary.takeError());
        if (llvm::Error failure = compileUnit(units[i], target, *temporary)) {
          llvm::sys::fs::remove(*temporary);
          return fail(std::move(failure));
        }
        llvm::Expected<std::string> stored = cache.store(*temporary, key);
        if (!stored)
          return fail(stored.takeError());
        if (std::error_code code = placeAt(*stored, objects[i]))
          fail(error("cannot copy " + *stored + " to " + objects[i] + ": " + code.message()));
      });
    pool.wait();
  }
  report.fromCache = fromCache;
  std::string message;
  for (const std::string &failure : failures)
    if (!failure.empty())
      message += (message.empty() ? "" : "\n") + failure;
  if (!message.empty())
    return error(message);
  cache.prune();
  return objects;
}
