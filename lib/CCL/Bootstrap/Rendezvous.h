// Rendezvous: rank 0 listens at the root address; every other rank connects,
// proves the job token (Auth/Hmac), and sends a Hello with its rank, host,
// device kind, pid and data-socket address. When all ranks are in, the root
// sends everyone the full table. The connections stay open until init
// finishes and carry small all-gathers (shm names ready, vendor ids).
//
// The root never trusts a client: connections that fail the challenge,
// send malformed or oversized frames, claim a rank out of range or one
// already taken, or name another job are logged, dropped, and the root keeps
// waiting for the real ranks until the timeout.
#pragma once

#include "Bootstrap/UniqueId.h"
#include "Common/Clock.h"
#include "Net/Socket.h"

#include <atomic>
#include <string>
#include <vector>

namespace hetccl {

struct PeerInfo {
  int32_t rank;
  int32_t nranks;
  int32_t pid;
  int32_t kind; // hetcclDeviceKind_t
  uint64_t jobId;
  char host[64];
  char dataHost[16];
  uint16_t dataPort;
  uint16_t pad[3];
};

class Rendezvous {
public:
  Rendezvous(const IdData& id, int rank, int nranks, const std::atomic<bool>* abortFlag);
  // Exchanges PeerInfo; returns the table indexed by rank.
  std::vector<PeerInfo> exchange(const PeerInfo& mine, const Deadline& dl);
  // Every rank contributes a blob (<= 64 KiB); everyone gets all of them.
  std::vector<std::vector<char>> allGather(const std::vector<char>& blob, const Deadline& dl);
  void barrier(const Deadline& dl) { allGather({}, dl); }
  // Rank 0 only: use this socket, already listening at the id's root
  // address, instead of binding the root port in exchange() (a split's
  // leader holds its port from the moment it picks it, so no one can take it).
  void adoptListener(Fd fd) { listen_ = std::move(fd); }

private:
  IdData id_;
  std::string token_;
  int rank_, nranks_;
  const std::atomic<bool>* abort_;
  Fd listen_;              // root only
  std::vector<Fd> peers_;  // root: one per rank
  Fd root_;                // others
};

} // namespace hetccl
