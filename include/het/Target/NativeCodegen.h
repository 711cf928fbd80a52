//===- NativeCodegen.h - LLVM IR to x86-64 objects, per function, in parallel ===//
//
// The back half of het-compile: a target machine for the host (or a named
// CPU), LLVM's optimisation pipeline, and object emission -- either for the
// whole module at once (--emit=llvm needs it whole), or split into units of
// one or a few functions that are optimised and emitted on several threads
// and kept in an on-disk object cache keyed by the unit's bitcode and the
// compiler's version and target (ccache for generated code).
//
//===----------------------------------------------------------------------===//

#ifndef HET_TARGET_NATIVECODEGEN_H
#define HET_TARGET_NATIVECODEGEN_H

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
class raw_pwrite_stream;
} // namespace llvm

namespace het::target {

/// What code is generated for: the triple, the CPU and its features (the
/// host's for "native"), and the optimisation level '0'..'3'.
struct NativeTarget {
  std::string triple;
  std::string cpu;
  std::string features;
  char optLevel = '2';
};

/// The host's x86-64 target; `mcpu` is "native" (the host's CPU and
/// features) or an LLVM CPU name.
llvm::Expected<NativeTarget> hostTarget(const std::string &mcpu, char optLevel);

/// A target machine for `target` (position-independent code). Each thread
/// that generates code needs its own.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const NativeTarget &target);

/// Sets `module`'s triple and data layout for `machine`.
void prepareModule(llvm::Module &module, llvm::TargetMachine &machine);

/// LLVM's default per-module pipeline at `optLevel` (nothing at '0'), with
/// loop and SLP vectorisation and glibc's vector math (libmvec: the
/// executable links -lmvec). Cached objects were made by it: bump
/// kCodegenRecipe whenever it (or emitObject) changes what it produces.
constexpr int kCodegenRecipe = 2;
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine, char optLevel);

/// The object code of `module` to `os`.
llvm::Error emitObject(llvm::Module &module, llvm::TargetMachine &machine,
                       llvm::raw_pwrite_stream &os);

/// How the split code generator works.
struct ParallelCodegenOptions {
  /// Threads; 0 means one per hardware thread.
  unsigned jobs = 0;
  /// Where objects are cached; empty for no cache.
  std::string cacheDirectory;
};

/// What it did, for het-compile --time.
struct ParallelCodegenReport {
  unsigned functions = 0; ///< function definitions in the module
  unsigned units = 0;     ///< modules it was split into
  unsigned fromCache = 0; ///< units whose object came from the cache
  unsigned threads = 0;
  /// Why the cache was not used, when one was asked for.
  std::string cacheProblem;
};

/// Optimises and emits `module` as several objects written into
/// `scratchDirectory` (which must exist); returns their paths, to be
/// linked together. `module` is changed (local symbols become hidden
/// external ones) and should not be used afterwards.
llvm::Expected<std::vector<std::string>>
emitObjectsInParallel(llvm::Module &module, const NativeTarget &target,
                      const ParallelCodegenOptions &options, const std::string &scratchDirectory,
                      ParallelCodegenReport &report);

/// The object cache's default place: $HET_CACHE_DIR, else
/// $XDG_CACHE_HOME/het/objects, else ~/.cache/het/objects; empty when
/// none of them can be named.
std::string defaultCacheDirectory();

} // namespace het::target

#endif // HET_TARGET_NATIVECODEGEN_H
