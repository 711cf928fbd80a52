// The contents of hetcclUniqueId: where the root listens, the job token
// every connection must prove, and a job id that names this job's shm
// segments. The token is secret: pass the id only over channels you trust.
#pragma once

#include "het-c/hetccl.h"

#include "Net/Socket.h"

#include <cstdint>
#include <string>

namespace hetccl {

struct IdData {
  uint32_t magic;
  uint16_t port;
  char host[16]; // dotted IPv4, NUL-terminated
  unsigned char token[32];
  uint64_t jobId;
};
static_assert(sizeof(IdData) <= HETCCL_UNIQUE_ID_BYTES, "IdData too large");

constexpr uint32_t kIdMagic = 0x48434944; // "HCID"

IdData decodeId(const hetcclUniqueId& id); // throws on a malformed id
hetcclUniqueId encodeId(const IdData& d);
void makeUniqueId(hetcclUniqueId* id);
void uniqueIdFromEnv(hetcclUniqueId* id);
// The root address the environment names: HETCCL_ROOT, else the torchrun
// pair MASTER_ADDR/MASTER_PORT. False if neither is set.
bool rootFromEnv(SockAddr *out);
// hetcclGetUniqueIdAt: root "host:port", port 0 = a free port of host now.
void makeUniqueIdForRoot(hetcclUniqueId* id, const std::string& root);
// A fresh id (random token, random job id other than avoidJobId) whose root
// is `root` exactly; the environment is not consulted. Used by
// hetcclCommSplit, whose leader already listens on `root`.
hetcclUniqueId makeUniqueIdAt(const SockAddr& root, uint64_t avoidJobId);

} // namespace hetccl
