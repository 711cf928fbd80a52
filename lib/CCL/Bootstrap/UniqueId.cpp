#include "Bootstrap/UniqueId.h"

#include "Auth/Hmac.h"
#include "Common/Error.h"
#include "Net/Socket.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <openssl/sha.h>

namespace hetccl {

IdData decodeId(const hetcclUniqueId& id) {
  IdData d;
  memcpy(&d, id.internal, sizeof d);
  if (d.magic != kIdMagic) fail(hetcclInvalidArgument, "unique id is not a hetccl id (bad magic)");
  if (memchr(d.host, 0, sizeof d.host) == nullptr || d.port == 0)
    fail(hetcclInvalidArgument, "unique id has a malformed root address");
  return d;
}

hetcclUniqueId encodeId(const IdData& d) {
  hetcclUniqueId id;
  memset(&id, 0, sizeof id);
  memcpy(id.internal, &d, sizeof d);
  return id;
}

// The root address from the environment, if any: HETCCL_ROOT wins over the
// torchrun pair MASTER_ADDR/MASTER_PORT.
bool rootFromEnv(SockAddr *out) {
  const char* root = getenv("HETCCL_ROOT");
  if (root && *root) {
    *out = parseHostPort(root);
    return true;
  }
  const char* addr = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  if (addr && *addr && port && *port) {
    *out = parseHostPort(std::string(addr) + ":" + port);
    return true;
  }
  return false;
}

static void setHost(IdData& d, const SockAddr& a) {
  if (a.host.size() >= sizeof d.host) fail(hetcclInvalidArgument, "root address too long: " + a.host);
  memset(d.host, 0, sizeof d.host);
  memcpy(d.host, a.host.data(), a.host.size());
  d.port = a.port;
}

// The first port of the kernel's ephemeral range, from which connect()
// takes source ports (Linux's default when /proc cannot be read).
static int ephemeralPortsStart() {
  int low = 32768;
  if (FILE* f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (fscanf(f, "%d", &low) != 1) low = 32768;
    fclose(f);
  }
  return low;
}

// A port of `root.host` free now; rank 0 binds it in hetcclCommInitRank
// (SO_REUSEADDR), as NCCL's bootstrap does. Picked below the ephemeral
// range when possible: a port in it can be taken between this pick and
// rank 0's bind by any connect() on the host -- including a rank's own
// connect to the root, which with nobody listening yet may get the root's
// port as its source and connect to itself (TCP simultaneous open).
static void pickFreePort(SockAddr& root) {
  int low = ephemeralPortsStart();
  int floor = std::max(1024, low - 16384);
  for (int attempt = 0; attempt < 64 && floor < low; ++attempt) {
    uint32_t r = 0;
    randomBytes(&r, sizeof r);
    SockAddr candidate = root;
    candidate.port = floor + int(r % uint32_t(low - floor));
    try {
      SockAddr bound;
      Fd probe = listenOn(candidate, &bound);
      root.port = bound.port;
      return;
    } catch (const CclError&) {
      // taken: try another
    }
  }
  SockAddr bound;
  Fd probe = listenOn(root, &bound); // port 0: the kernel's choice
  root.port = bound.port;
}

static hetcclUniqueId freshId(const SockAddr& root) {
  IdData d{};
  d.magic = kIdMagic;
  setHost(d, root);
  randomBytes(d.token, sizeof d.token);
  randomBytes(&d.jobId, sizeof d.jobId);
  return encodeId(d);
}

void makeUniqueId(hetcclUniqueId* id) {
  SockAddr root;
  if (!rootFromEnv(&root)) {
    root.host = "127.0.0.1";
    pickFreePort(root);
  }
  *id = freshId(root);
}

void makeUniqueIdForRoot(hetcclUniqueId* id, const std::string& rootText) {
  SockAddr root;
  // parseHostPort rejects port 0, which here means "pick one".
  if (rootText.size() > 2 && rootText.compare(rootText.size() - 2, 2, ":0") == 0) {
    root = parseHostPort(rootText.substr(0, rootText.size() - 2) + ":1");
    root.port = 0;
    pickFreePort(root);
  } else {
    root = parseHostPort(rootText);
  }
  *id = freshId(root);
}

hetcclUniqueId makeUniqueIdAt(const SockAddr& root, uint64_t avoidJobId) {
  IdData d{};
  d.magic = kIdMagic;
  setHost(d, root);
  randomBytes(d.token, sizeof d.token);
  // The job id names the shm segments (/hetccl-<jobId>-<rank>); 64 random
  // bits, and never the parent's, so a split's segments collide with no one's.
  do randomBytes(&d.jobId, sizeof d.jobId);
  while (d.jobId == avoidJobId);
  return encodeId(d);
}

void uniqueIdFromEnv(hetcclUniqueId* id) {
  IdData d{};
  d.magic = kIdMagic;
  SockAddr root;
  if (!rootFromEnv(&root))
    fail(hetcclInvalidArgument, "set HETCCL_ROOT=host:port or MASTER_ADDR and MASTER_PORT to bootstrap from the environment");
  setHost(d, root);
  const char* token = getenv("HETCCL_TOKEN");
  if (!token || !*token)
    fail(hetcclInvalidArgument, "HETCCL_TOKEN is not set: every rank of a job needs the same secret job token");
  if (strlen(token) < 16) fail(hetcclInvalidArgument, "HETCCL_TOKEN is too short (need at least 16 characters)");
  // Key = SHA-256(token); job id = first 8 bytes of SHA-256(key | root), so
  // all ranks derive the same values without talking.
  SHA256(reinterpret_cast<const unsigned char*>(token), strlen(token), d.token);
  unsigned char buf[32 + 24] = {};
  memcpy(buf, d.token, 32);
  memcpy(buf + 32, d.host, sizeof d.host);
  memcpy(buf + 48, &d.port, 2);
  unsigned char h[32];
  SHA256(buf, sizeof buf, h);
  memcpy(&d.jobId, h, 8);
  *id = encodeId(d);
}

} // namespace hetccl
