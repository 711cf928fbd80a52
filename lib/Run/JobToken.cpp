//===- JobToken.cpp - job tokens, token files, HMAC -----------------------===//
#include "het/Run/JobToken.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace het::run {

namespace {
std::string hex(const unsigned char *bytes, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}
} // namespace

std::string randomHex(size_t n) {
  std::string bytes(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char *>(bytes.data()), static_cast<int>(n)) != 1)
    throw std::runtime_error("OpenSSL RAND_bytes failed");
  return hex(reinterpret_cast<const unsigned char *>(bytes.data()), n);
}

std::string generateToken() { return randomHex(32); }

std::string hmacHex(const std::string &key, const std::string &message) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char *>(message.data()), message.size(), out, &len))
    throw std::runtime_error("OpenSSL HMAC failed");
  return hex(out, len);
}

std::string sha256Hex(const std::string &data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr))
    throw std::runtime_error("OpenSSL SHA-256 failed");
  return hex(out, len);
}

std::string attemptToken(const std::string &jobToken, int attempt, const std::string &root) {
  return hmacHex(jobToken, "hetccl rendezvous\n" + std::to_string(attempt) + "\n" + root);
}

bool equalInConstantTime(const std::string &a, const std::string &b) {
  if (a.size() != b.size())
    return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void checkToken(const std::string &token, const std::string &where) {
  if (token.size() < 16)
    throw std::invalid_argument(where + ": a job token has at least 16 characters (this one " +
                                std::to_string(token.size()) +
                                "); make one with `openssl rand -hex 32`");
  for (unsigned char c : token)
    if (c <= ' ' || c >= 127)
      throw std::invalid_argument(where + ": a job token is printable ASCII without spaces");
}

std::string readTokenFile(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error("cannot read the token file " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error("the token file " + path + " is not a regular file");
  if (st.st_mode & 077)
    throw std::runtime_error("the token file " + path +
                             " may be read or written by others than its owner (chmod 600 it)");
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token))
    throw std::runtime_error("the token file " + path + " is empty or cannot be read");
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
    token.pop_back();
  try {
    checkToken(token, "the token file " + path);
  } catch (const std::invalid_argument &e) {
    throw std::runtime_error(e.what());
  }
  return token;
}

void writeTokenFile(const std::string &path, const std::string &token) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error("cannot create the token file " + path + ": " + std::strerror(errno));
  std::string line = token + "\n";
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    ::unlink(path.c_str());
    throw std::runtime_error("cannot write the token file " + path + ": " + std::strerror(errno));
  }
}

std::string privateTokenDirectory() {
  std::string dir;
  if (const char *runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime)
    dir = std::string(runtime) + "/het";
  else
    dir = "/tmp/het-" + std::to_string(::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot make " + dir + " for token files: " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 077))
    throw std::runtime_error(dir + " is not a folder only this user may enter (mode 0700, ours); "
                                   "token files are not written there");
  return dir;
}

JobToken resolveJobToken(const std::string &tokenFile, bool mayGenerate,
                         const std::string &purpose) {
  JobToken t;
  if (const char *env = std::getenv("HETCCL_TOKEN"); env && *env) {
    try {
      checkToken(env, "HETCCL_TOKEN");
    } catch (const std::invalid_argument &e) {
      throw std::runtime_error(e.what());
    }
    t.value = env;
    t.source = "HETCCL_TOKEN";
    return t;
  }
  if (!tokenFile.empty() && ::access(tokenFile.c_str(), F_OK) == 0) {
    t.value = readTokenFile(tokenFile);
    t.file = tokenFile;
    t.source = "token file " + tokenFile;
    return t;
  }
  if (!mayGenerate)
    throw std::runtime_error(
        purpose +
        " needs the job's token: set HETCCL_TOKEN, or give --token-file F (the file "
        "the job's het-run named when it started" +
        (tokenFile.empty() ? std::string(")") : "; " + tokenFile + " does not exist)"));
  t.value = generateToken();
  t.file = tokenFile.empty() ? privateTokenDirectory() + "/" + purpose + "-" +
                                   std::to_string(::getpid()) + ".token"
                             : tokenFile;
  writeTokenFile(t.file, t.value);
  t.generated = true;
  t.source = "generated, written to " + t.file;
  return t;
}

} // namespace het::run
