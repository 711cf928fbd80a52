//===- RequestSignature.h - signed HTTP control requests ---------*- C++ -*-===//
//
// A request that changes a job (POST /admit, and any such endpoint to come)
// carries the header
//
//   X-Het-Signature: t=<unix seconds>, n=<32 hex digits>, mac=<64 hex digits>
//
// where mac = HMAC-SHA256(job token, METHOD "\n" PATH "\n" QUERY "\n" t "\n" n)
// and QUERY is the request's parameters sorted by name, `name=value`
// joined by '&' (values as sent, not re-encoded). The server accepts it
// when the mac matches (compared in constant time), t is within the
// allowed clock skew of its own clock, and the nonce n was not used within
// that window: a captured request cannot be replayed, and the token itself
// never crosses the network. Read-only views may ask for the token too
// (het-run --console-auth): there the header above or
// `Authorization: Bearer <token>` (what Prometheus sends) is accepted.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_REQUESTSIGNATURE_H
#define HET_RUN_REQUESTSIGNATURE_H

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace het::run {

/// The header that carries a request's signature.
inline constexpr const char *kSignatureHeader = "X-Het-Signature";

/// The canonical text a signature covers.
std::string canonicalRequest(const std::string &method, const std::string &path,
                             const std::multimap<std::string, std::string> &params,
                             int64_t unixSeconds, const std::string &nonce);

/// The X-Het-Signature value for a request signed now (or at `unixSeconds`
/// with `nonce`, for tests).
std::string signRequest(const std::string &token, const std::string &method,
                        const std::string &path,
                        const std::multimap<std::string, std::string> &params);
std::string signRequest(const std::string &token, const std::string &method,
                        const std::string &path,
                        const std::multimap<std::string, std::string> &params, int64_t unixSeconds,
                        const std::string &nonce);

/// What a server makes of a request's credentials.
struct Verdict {
  int status = 200;   // 200 accepted, 401 no credential, 403 refused
  std::string reason; // why not, for the response and the log
  bool ok() const { return status == 200; }
};

/// Checks signed requests against one job token; remembers the nonces it
/// accepted for twice the allowed skew, so a replay is refused.
/// Thread-safe (HTTP servers answer on several threads).
class RequestVerifier {
public:
  explicit RequestVerifier(std::string token, int64_t maxSkewSeconds = 60);

  /// A state-changing request: only a valid X-Het-Signature is accepted.
  Verdict verifySigned(const std::string &method, const std::string &path,
                       const std::multimap<std::string, std::string> &params,
                       const std::string &signatureHeader, int64_t nowUnixSeconds);
  /// A read-only request: a valid signature, or `Authorization: Bearer T`
  /// with the job's token.
  Verdict verifyReader(const std::string &method, const std::string &path,
                       const std::multimap<std::string, std::string> &params,
                       const std::string &signatureHeader, const std::string &authorization,
                       int64_t nowUnixSeconds);

private:
  std::string token_;
  int64_t maxSkew_;
  std::mutex mutex_;
  std::set<std::string> seen_;                       // nonces accepted recently
  std::deque<std::pair<int64_t, std::string>> ages_; // (when, nonce), oldest first
};

/// The current time in whole seconds since the epoch.
int64_t unixNow();

} // namespace het::run

#endif
