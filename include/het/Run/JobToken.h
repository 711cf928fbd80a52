//===- JobToken.h - the job token that authenticates het-run's control plane -===//
//
// One secret per job authenticates everything that can change it: the HTTP
// control endpoints of het-run (POST /admit, and every state-changing
// endpoint to come), the channel between a --coordinate het-run and its
// --join agents, and hetccl's rendezvous. The token never crosses the
// network: both ends prove they hold it with HMAC-SHA256 over fresh nonces
// (ChannelAuth.h, RequestSignature.h), as hetccl's rendezvous does
// (lib/CCL/Auth/Hmac.h). HMAC, SHA-256 and randomness come from OpenSSL's
// libcrypto.
//
// Where a job's token comes from: HETCCL_TOKEN (a Kubernetes Secret, or
// set by hand), else a token file (--token-file), else a fresh one that
// het-run writes to a token file only its user can read.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_JOBTOKEN_H
#define HET_RUN_JOBTOKEN_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace het::run {

/// A fresh token: 32 random bytes as 64 lower-case hex digits.
std::string generateToken();
/// `n` random bytes as 2n hex digits (nonces).
std::string randomHex(size_t n);

/// HMAC-SHA256 of `message` under `key`, as 64 hex digits.
std::string hmacHex(const std::string &key, const std::string &message);
/// SHA-256 of `data`, as 64 hex digits.
std::string sha256Hex(const std::string &data);
/// a == b in time that depends on their lengths only.
bool equalInConstantTime(const std::string &a, const std::string &b);

/// The hetccl rendezvous token of one attempt of a coordinated job:
/// derived from the job token, the attempt and its root by the coordinator's
/// agents alike, so it is never sent.
std::string attemptToken(const std::string &jobToken, int attempt, const std::string &root);

/// Checks that `token` can serve as a job token (at least 16 characters,
/// printable, no spaces); throws std::invalid_argument naming `where` and
/// the problem.
void checkToken(const std::string &token, const std::string &where);

/// The token in `path`: its first line, trailing whitespace dropped.
/// Throws std::runtime_error naming the file when it cannot be read, is
/// empty, or others than its owner may read or write it (mode & 077), as
/// ssh refuses a private key others can read.
std::string readTokenFile(const std::string &path);
/// Writes `token` to `path`, created with mode 0600; never follows a
/// symbolic link or replaces an existing file (O_CREAT | O_EXCL |
/// O_NOFOLLOW). Throws std::runtime_error naming the file.
void writeTokenFile(const std::string &path, const std::string &token);
/// A folder for token files that only this user can enter:
/// $XDG_RUNTIME_DIR/het, else /tmp/het-<uid> (made with mode 0700; an
/// existing one must be ours and 0700). Throws std::runtime_error.
std::string privateTokenDirectory();

/// Where a job's token came from, for messages.
struct JobToken {
  std::string value;
  std::string source; // "HETCCL_TOKEN", "token file F", "generated, written to F"
  std::string file;   // the token file, if any
  bool generated = false;
};

/// The token of a job this process serves or joins: HETCCL_TOKEN if set,
/// else the token in `tokenFile` if it exists; else, when `mayGenerate`, a
/// fresh one written to `tokenFile` (or to a new file in
/// privateTokenDirectory() named after `purpose` and this process).
/// Throws std::runtime_error (no token and none may be generated: the
/// message says how to give one).
JobToken resolveJobToken(const std::string &tokenFile, bool mayGenerate,
                         const std::string &purpose);

} // namespace het::run

#endif
