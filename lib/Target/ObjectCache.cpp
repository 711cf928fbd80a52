//===- ObjectCache.cpp - generated objects on disk, keyed by what made them -===//
//
// ccache's idea for het's own code generator: recompiling a model whose
// layers did not change reuses their objects. The key covers everything
// that decides the object's bytes -- the unit's bitcode (its IR), the
// target and -O level, and the versions of het and of LLVM (a new
// compiler never reuses an old compiler's code).
//
//===----------------------------------------------------------------------===//

#include "ObjectCache.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

#ifndef HET_VERSION
#error "HET_VERSION must be defined by the build"
#endif

using namespace het::target;

namespace {
// LLVM's pruning only considers files whose names start with "llvmcache-".
constexpr const char *kEntryPrefix = "llvmcache-het-";
// Entries unused for two weeks go; the cache stays under 2 GiB and under
// half the free space.
constexpr const char *kPruningPolicy =
    "prune_interval=10m:prune_after=336h:cache_size_bytes=2g:cache_size=50%";
} // namespace

std::string het::target::defaultCacheDirectory() {
  if (const char *set = std::getenv("HET_CACHE_DIR"); set && *set)
    return set;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    path = xdg;
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    path = home;
    llvm::sys::path::append(path, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "het", "objects");
  return path.str().str();
}

ObjectCache::ObjectCache(std::string directory, const NativeTarget &target)
    : directory_(std::move(directory)) {
  llvm::raw_string_ostream salt(salt_);
  salt << "het-object-cache-1 recipe " << kCodegenRecipe << '\n' << HET_VERSION << '\n' << LLVM_VERSION_STRING << '\n'
       << target.triple << '\n' << target.cpu << '\n' << target.features << '\n'
       << target.optLevel << '\n';
  if (directory_.empty()) {
    problem_ = "no cache directory";
    return;
  }
  if (std::error_code error = llvm::sys::fs::create_directories(directory_)) {
    problem_ = "cannot create " + directory_ + ": " + error.message();
    return;
  }
  if (llvm::sys::fs::access(directory_, llvm::sys::fs::AccessMode::Write)) {
    problem_ = directory_ + " is not writable";
    return;
  }
  usable_ = true;
}

std::string ObjectCache::key(llvm::ArrayRef<char> bitcode, llvm::StringRef variant) const {
  llvm::SHA256 hash;
  hash.update(salt_);
  hash.update(variant);
  hash.update("\n");
  hash.update(llvm::StringRef(bitcode.data(), bitcode.size()));
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::string ObjectCache::entryPath(const std::string &key) const {
  llvm::SmallString<256> path(directory_);
  llvm::sys::path::append(path, kEntryPrefix + key + ".o");
  return path.str().str();
}

std::optional<std::string> ObjectCache::lookup(const std::string &key) const {
  if (!usable_)
    return std::nullopt;
  std::string path = entryPath(key);
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status) || status.getSize() == 0)
    return std::nullopt;
  return path;
}

llvm::Expected<std::string> ObjectCache::temporaryPath() const {
  llvm::SmallString<256> model(directory_);
  llvm::sys::path::append(model, "het-tmp-%%%%%%%%.o");
  llvm::SmallString<256> path;
  int fd = -1;
  if (std::error_code error = llvm::sys::fs::createUniqueFile(model, fd, path))
    return llvm::createStringError(error, "cannot create a file in the object cache " +
                                              directory_ + ": " + error.message());
  llvm::sys::fs::closeFile(fd);
  return path.str().str();
}

llvm::Expected<std::string> ObjectCache::store(const std::string &temporary,
                                               const std::string &key) const {
  std::string path = entryPath(key);
  if (std::error_code error = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(error, "cannot move an object into the cache at " + path +
                                              ": " + error.message());
  }
  return path;
}

void ObjectCache::prune() const {
  if (!usable_)
    return;
  llvm::Expected<llvm::CachePruningPolicy> policy = llvm::parseCachePruningPolicy(kPruningPolicy);
  if (!policy) {
    llvm::consumeError(policy.takeError());
    return;
  }
  llvm::pruneCache(directory_, *policy);
}
