//===- ObjectCache.h - generated objects on disk, keyed by what made them ---===//

#ifndef HET_LIB_TARGET_OBJECTCACHE_H
#define HET_LIB_TARGET_OBJECTCACHE_H

#include "het/Target/NativeCodegen.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>

namespace het::target {

/// A directory of object files named by the SHA-256 of a unit's bitcode,
/// the target (triple, CPU, features, -O level) and the versions of het
/// and LLVM. Entries are written to a temporary name and renamed, so
/// compilers sharing the cache never see half an object; LLVM's cache
/// pruning keeps it under its size limit.
class ObjectCache {
public:
  /// A cache in `directory`, created if missing; `problem` says why not
  /// when it cannot be used (then every lookup misses and nothing is
  /// stored).
  ObjectCache(std::string directory, const NativeTarget &target);

  bool usable() const { return usable_; }
  const std::string &problem() const { return problem_; }

  /// The key of a unit compiled with `variant` (how it differs from the
  /// cache's target, e.g. a lower -O level).
  std::string key(llvm::ArrayRef<char> bitcode, llvm::StringRef variant) const;
  /// The cached object for `key`, if any.
  std::optional<std::string> lookup(const std::string &key) const;
  /// A fresh temporary path in the cache directory to write an object to.
  llvm::Expected<std::string> temporaryPath() const;
  /// Moves the object at `temporary` into the cache under `key`; returns
  /// its path.
  llvm::Expected<std::string> store(const std::string &temporary, const std::string &key) const;
  /// Drops the least recently used entries beyond the size limit.
  void prune() const;

private:
  std::string entryPath(const std::string &key) const;

  std::string directory_;
  std::string salt_;
  bool usable_ = false;
  std::string problem_;
};

} // namespace het::target

#endif // HET_LIB_TARGET_OBJECTCACHE_H
