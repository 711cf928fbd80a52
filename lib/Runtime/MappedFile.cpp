//===- MappedFile.cpp - a data file mapped read-only ----------------------===//

#include "MappedFile.h"

#include "Arguments.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace het::rt {

MappedFile::MappedFile(const std::string &path, const std::string &use) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    die(use + " " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    die(use + " " + path + ": " + std::strerror(error));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) {
    ::close(fd);
    return;
  }
  void *bytes = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  int error = errno;
  ::close(fd);
  if (bytes == MAP_FAILED)
    die(use + " " + path + ": cannot map it: " + std::strerror(error));
  bytes_ = static_cast<const char *>(bytes);
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : path_(std::move(other.path_)), bytes_(other.bytes_), size_(other.size_) {
  other.bytes_ = nullptr;
  other.size_ = 0;
}

MappedFile::~MappedFile() {
  if (bytes_)
    ::munmap(const_cast<char *>(bytes_), size_);
}

void MappedFile::advise(int advice) const {
  if (bytes_)
    ::madvise(const_cast<char *>(bytes_), size_, advice);
}

void MappedFile::willNeed(size_t offset, size_t length) const {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (!bytes_ || offset >= size_)
    return;
  uintptr_t begin = reinterpret_cast<uintptr_t>(bytes_) + offset;
  uintptr_t end = begin + std::min(length, size_ - offset);
  begin &= ~(page - 1);
  ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_WILLNEED);
}

} // namespace het::rt
