//===- AtomicFile.h - crash-safe file replacement -------------*- C++ -*-===//
//
// A reader (resume) must never see half a file: we write to a hidden temp
// name, fsync the file, rename it over the final name and fsync the directory
// so the rename itself survives a power cut.
//
#ifndef HET_CHECKPOINT_ATOMICFILE_H
#define HET_CHECKPOINT_ATOMICFILE_H

#include <cstddef>
#include <string>
#include <vector>

namespace het::ckpt {

/// One piece of a file written with writev-like semantics.
struct Piece {
  const void *data;
  size_t size;
};

/// Writes the concatenation of `pieces` to `dir/name` atomically. Temp files
/// are named ".tmp-<name>-<pid>"; they are never taken for checkpoints.
void writeFileAtomic(const std::string &dir, const std::string &name,
                     const std::vector<Piece> &pieces);
/// Removes leftover temp files of crashed writers in `dir`; returns how many.
int removeStaleTempFiles(const std::string &dir);
/// mkdir -p.
void makeDirs(const std::string &dir);

} // namespace het::ckpt

#endif
