//===- RequestSignature.cpp - signed HTTP control requests ----------------===//
#include "het/Run/RequestSignature.h"
#include "het/Run/JobToken.h"

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace het::run {

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string canonicalRequest(const std::string &method, const std::string &path,
                             const std::multimap<std::string, std::string> &params,
                             int64_t unixSeconds, const std::string &nonce) {
  // multimap: sorted by name, and values of one name in the order given.
  std::string query;
  for (const auto &[name, value] : params)
    query += (query.empty() ? "" : "&") + name + "=" + value;
  return method + "\n" + path + "\n" + query + "\n" + std::to_string(unixSeconds) + "\n" + nonce;
}

std::string signRequest(const std::string &token, const std::string &method,
                        const std::string &path,
                        const std::multimap<std::string, std::string> &params, int64_t unixSeconds,
                        const std::string &nonce) {
  return "t=" + std::to_string(unixSeconds) + ", n=" + nonce +
         ", mac=" + hmacHex(token, canonicalRequest(method, path, params, unixSeconds, nonce));
}

std::string signRequest(const std::string &token, const std::string &method,
                        const std::string &path,
                        const std::multimap<std::string, std::string> &params) {
  return signRequest(token, method, path, params, unixNow(), randomHex(16));
}

namespace {
/// The fields of "t=..., n=..., mac=..."; false when one is missing.
bool parseSignature(const std::string &header, std::string &t, std::string &n, std::string &mac) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string::npos)
      end = header.size();
    std::string part = header.substr(pos, end - pos);
    size_t first = part.find_first_not_of(' ');
    part = first == std::string::npos ? "" : part.substr(first);
    size_t eq = part.find('=');
    if (eq != std::string::npos) {
      std::string key = part.substr(0, eq), value = part.substr(eq + 1);
      while (!value.empty() && value.back() == ' ')
        value.pop_back();
      if (key == "t")
        t = value;
      else if (key == "n")
        n = value;
      else if (key == "mac")
        mac = value;
    }
    pos = end + 1;
  }
  return !t.empty() && !n.empty() && !mac.empty();
}

bool allHex(const std::string &s) {
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}
} // namespace

RequestVerifier::RequestVerifier(std::string token, int64_t maxSkewSeconds)
    : token_(std::move(token)), maxSkew_(maxSkewSeconds) {}

Verdict RequestVerifier::verifySigned(const std::string &method, const std::string &path,
                                      const std::multimap<std::string, std::string> &params,
                                      const std::string &signatureHeader, int64_t now) {
  if (signatureHeader.empty())
    return {401, "this request changes the job: it needs the job token (a " +
                     std::string(kSignatureHeader) + " header, as het-run --admit sends)"};
  std::string t, n, mac;
  if (!parseSignature(signatureHeader, t, n, mac) || !allHex(n) || n.size() < 16 || n.size() > 128)
    return {403, std::string("malformed ") + kSignatureHeader +
                     " header (expected t=<unix seconds>, n=<hex nonce>, mac=<hex>)"};
  char *end = nullptr;
  long long when = std::strtoll(t.c_str(), &end, 10);
  if (*end)
    return {403, std::string("malformed time in the ") + kSignatureHeader + " header"};
  std::string want = hmacHex(token_, canonicalRequest(method, path, params, when, n));
  if (!equalInConstantTime(want, mac))
    return {403, "wrong job token (the request's signature does not match)"};
  if (when < now - maxSkew_ || when > now + maxSkew_)
    return {403, "stale request: signed at " + std::to_string(when) + ", " +
                     std::to_string(now - when) + " s from this server's clock (at most " +
                     std::to_string(maxSkew_) + " s either way)"};
  std::lock_guard<std::mutex> lock(mutex_);
  while (!ages_.empty() && ages_.front().first < now - 2 * maxSkew_) {
    seen_.erase(ages_.front().second);
    ages_.pop_front();
  }
  if (!seen_.insert(n).second)
    return {403, "replayed request: its nonce was used before"};
  ages_.push_back({now, n});
  return {};
}

Verdict RequestVerifier::verifyReader(const std::string &method, const std::string &path,
                                      const std::multimap<std::string, std::string> &params,
                                      const std::string &signatureHeader,
                                      const std::string &authorization, int64_t now) {
  if (!signatureHeader.empty())
    return verifySigned(method, path, params, signatureHeader, now);
  static const std::string bearer = "Bearer ";
  if (authorization.empty())
    return {401, "this server's views need the job token (Authorization: Bearer <token>, or "
                 "het-run --status with the token)"};
  if (authorization.compare(0, bearer.size(), bearer) != 0 ||
      !equalInConstantTime(authorization.substr(bearer.size()), token_))
    return {403, "wrong job token"};
  return {};
}

} // namespace het::run
