//===- AtomicFile.cpp - temp file, fsync, rename, fsync dir ---------------===//
#include "het/Checkpoint/AtomicFile.h"
#include "het/Checkpoint/Snapshot.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace het::ckpt {

namespace {
[[noreturn]] void fail(const std::string &what, const std::string &path) {
  throw CheckpointError(what + " " + path + ": " + std::strerror(errno));
}

void fsyncDir(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory", dir);
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    fail("cannot fsync directory", dir);
  }
  ::close(fd);
}
} // namespace

void makeDirs(const std::string &dir) {
  if (dir.empty()) return;
  std::string cur;
  size_t i = 0;
  while (i <= dir.size()) {
    size_t j = dir.find('/', i);
    if (j == std::string::npos) j = dir.size();
    cur = dir.substr(0, j);
    if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      fail("cannot create directory", cur);
    i = j + 1;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw CheckpointError(dir + " is not a directory");
}

void writeFileAtomic(const std::string &dir, const std::string &name,
                     const std::vector<Piece> &pieces) {
  std::string tmp = dir + "/.tmp-" + name + "-" + std::to_string(::getpid());
  std::string dst = dir + "/" + name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", tmp);
  for (const Piece &p : pieces) {
    const char *b = static_cast<const char *>(p.data);
    size_t left = p.size;
    while (left > 0) {
      ssize_t w = ::write(fd, b, left);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        errno = e;
        fail("cannot write", tmp);
      }
      b += w;
      left -= size_t(w);
    }
  }
  // The data must be on disk before the name points at it, or a crash after
  // the rename could expose a file of zeros under the final name.
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = e;
    fail("cannot fsync", tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), dst.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    fail("cannot rename into place", dst);
  }
  fsyncDir(dir);
}

int removeStaleTempFiles(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d) return 0;
  int n = 0;
  while (dirent *e = ::readdir(d)) {
    std::string s = e->d_name;
    if (s.rfind(".tmp-", 0) == 0 && ::unlink((dir + "/" + s).c_str()) == 0) ++n;
  }
  ::closedir(d);
  return n;
}

} // namespace het::ckpt
