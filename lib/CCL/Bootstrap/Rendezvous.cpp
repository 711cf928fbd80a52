#include "Bootstrap/Rendezvous.h"

#include "Auth/Hmac.h"
#include "Common/Error.h"
#include "Common/Log.h"
#include "Net/Frame.h"

#include <cstring>

namespace hetccl {

constexpr uint32_t kMaxBlob = 64 << 10;
constexpr int kMaxRanks = 1 << 16;
// A connecting client gets this long to finish the handshake, so a silent
// intruder cannot hold the root up for the whole timeout.
constexpr int64_t kHandshakeMs = 5000;

Rendezvous::Rendezvous(const IdData& id, int rank, int nranks, const std::atomic<bool>* abortFlag)
    : id_(id), token_(reinterpret_cast<const char*>(id.token), sizeof id.token), rank_(rank), nranks_(nranks),
      abort_(abortFlag) {}

static bool validString(const char* s, size_t n) { return memchr(s, 0, n) != nullptr; }

std::vector<PeerInfo> Rendezvous::exchange(const PeerInfo& mine, const Deadline& dl) {
  std::vector<PeerInfo> table(nranks_);
  SockAddr rootAddr{id_.host, id_.port};
  if (rank_ != 0) {
    root_ = connectRetry(rootAddr, dl, abort_);
    authClient(root_.get(), token_, dl, abort_);
    sendFrame(root_.get(), FrameType::Hello, &mine, sizeof mine, dl, abort_);
    std::vector<char> t = recvFrame(root_.get(), FrameType::Table, uint32_t(sizeof(PeerInfo) * nranks_), dl, abort_);
    if (t.size() != sizeof(PeerInfo) * nranks_) fail(hetcclRemoteError, "root sent a malformed rank table");
    memcpy(table.data(), t.data(), t.size());
    for (int r = 0; r < nranks_; ++r)
      if (table[r].rank != r || !validString(table[r].host, sizeof table[r].host) ||
          !validString(table[r].dataHost, sizeof table[r].dataHost))
        fail(hetcclRemoteError, "root sent a malformed rank table");
    return table;
  }

  if (nranks_ > kMaxRanks) fail(hetcclInvalidArgument, "too many ranks");
  if (!listen_) listen_ = listenOn(rootAddr, nullptr);
  peers_.resize(nranks_);
  table[0] = mine;
  int joined = 1;
  while (joined < nranks_) {
    std::string who;
    Fd c = acceptUntil(listen_.get(), dl, abort_, &who);
    if (!c) {
      if (dl.passed())
        fail(hetcclTimeout, "rendezvous timed out: " + std::to_string(joined) + " of " + std::to_string(nranks_) +
                                " ranks joined at " + rootAddr.str());
      continue;
    }
    Deadline hs{std::min(dl.atNs, nowNs() + kHandshakeMs * 1000000)};
    try {
      authServer(c.get(), token_, who, hs, abort_);
      std::vector<char> h = recvFrame(c.get(), FrameType::Hello, sizeof(PeerInfo), hs, abort_);
      PeerInfo p;
      if (h.size() != sizeof p) fail(hetcclRemoteError, "malformed hello");
      memcpy(&p, h.data(), sizeof p);
      if (p.jobId != id_.jobId) fail(hetcclRemoteError, "hello for another job");
      if (p.nranks != nranks_)
        fail(hetcclInvalidUsage, "rank " + std::to_string(p.rank) + " says nranks=" + std::to_string(p.nranks) +
                                     ", root has " + std::to_string(nranks_));
      if (p.rank <= 0 || p.rank >= nranks_) fail(hetcclRemoteError, "hello with rank out of range");
      if (peers_[p.rank]) fail(hetcclRemoteError, "rank " + std::to_string(p.rank) + " joined twice");
      if (!validString(p.host, sizeof p.host) || !validString(p.dataHost, sizeof p.dataHost))
        fail(hetcclRemoteError, "malformed hello strings");
      table[p.rank] = p;
      peers_[p.rank] = std::move(c);
      ++joined;
    } catch (const CclError& e) {
      if (e.result() == hetcclAborted) throw;
      // Auth failures were logged by authServer; log the rest here.
      if (e.result() != hetcclAuthError) logWarn("rendezvous: dropped connection from %s: %s", who.c_str(), e.what());
    }
  }
  for (int r = 1; r < nranks_; ++r)
    sendFrame(peers_[r].get(), FrameType::Table, table.data(), uint32_t(sizeof(PeerInfo) * nranks_), dl, abort_);
  return table;
}

std::vector<std::vector<char>> Rendezvous::allGather(const std::vector<char>& blob, const Deadline& dl) {
  if (blob.size() > kMaxBlob) fail(hetcclInternalError, "bootstrap blob too large");
  std::vector<std::vector<char>> all(nranks_);
  if (nranks_ == 1) {
    all[0] = blob;
    return all;
  }
  if (rank_ != 0) {
    sendFrame(root_.get(), FrameType::Blob, blob.data(), uint32_t(blob.size()), dl, abort_);
    std::vector<char> packed =
        recvFrame(root_.get(), FrameType::BlobAll, uint32_t((kMaxBlob + 4) * nranks_), dl, abort_);
    size_t off = 0;
    for (int r = 0; r < nranks_; ++r) {
      uint32_t len;
      if (off + 4 > packed.size()) fail(hetcclRemoteError, "malformed bootstrap all-gather");
      memcpy(&len, packed.data() + off, 4);
      off += 4;
      if (len > kMaxBlob || off + len > packed.size()) fail(hetcclRemoteError, "malformed bootstrap all-gather");
      all[r].assign(packed.data() + off, packed.data() + off + len);
      off += len;
    }
    return all;
  }
  all[0] = blob;
  for (int r = 1; r < nranks_; ++r) all[r] = recvFrame(peers_[r].get(), FrameType::Blob, kMaxBlob, dl, abort_);
  std::vector<char> packed;
  for (auto& b : all) {
    uint32_t len = uint32_t(b.size());
    packed.insert(packed.end(), reinterpret_cast<char*>(&len), reinterpret_cast<char*>(&len) + 4);
    packed.insert(packed.end(), b.begin(), b.end());
  }
  for (int r = 1; r < nranks_; ++r)
    sendFrame(peers_[r].get(), FrameType::BlobAll, packed.data(), uint32_t(packed.size()), dl, abort_);
  return all;
}

} // namespace hetccl
