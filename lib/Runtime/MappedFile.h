//===- MappedFile.h - a data file mapped read-only --------------*- C++ -*-===//
//
// Token files and sample shards are read through the page cache, never
// whole: mapped once, read where the samples are, paged in ahead by
// madvise. A failure to open or map dies naming the file and the reason.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_MAPPEDFILE_H
#define HET_LIB_RUNTIME_MAPPEDFILE_H

#include <cstddef>
#include <string>

namespace het::rt {

class MappedFile {
public:
  /// Maps `path`; `use` ("--data") begins the error message. An empty file
  /// maps to no bytes.
  MappedFile(const std::string &path, const std::string &use);
  ~MappedFile();
  MappedFile(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  MappedFile &operator=(MappedFile &&) = delete;

  const char *bytes() const { return bytes_; }
  size_t size() const { return size_; }
  const std::string &path() const { return path_; }
  /// madvise over the whole file (MADV_SEQUENTIAL for a scan, MADV_RANDOM
  /// for sample reads).
  void advise(int advice) const;
  /// Asks the kernel to read bytes [offset, offset + length) ahead.
  void willNeed(size_t offset, size_t length) const;

private:
  std::string path_;
  const char *bytes_ = nullptr;
  size_t size_ = 0;
};

} // namespace het::rt

#endif
