#include "Bootstrap/InheritedListener.h"

#include "Common/Error.h"
#include "Common/Log.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>

namespace hetccl {

static const char* const kVar = "HETCCL_ROOT_FD";

// One socket, one owner: the first communicator that takes it closes it when
// its rendezvous ends, and the number may by then name another file.
static std::atomic<bool> taken{false};

static void bad(const std::string& what) {
  fail(hetcclInvalidArgument, std::string(kVar) + "=" + getenv(kVar) + ": " + what);
}

Fd takeInheritedRootListener(const IdData& id) {
  const char* text = getenv(kVar);
  if (!text || !*text) return Fd();
  SockAddr root;
  if (!rootFromEnv(&root) || root.port != id.port || root.host != id.host) return Fd();
  if (taken.exchange(true)) return Fd();

  char* end = nullptr;
  errno = 0;
  long fd = strtol(text, &end, 10);
  if (errno != 0 || *end != 0 || fd < 0 || fd > 1 << 20) bad("not a file descriptor number");
  if (fcntl(int(fd), F_GETFD) < 0) bad(std::string("not an open file descriptor (") + strerror(errno) + ")");
  int listening = 0;
  socklen_t len = sizeof listening;
  if (getsockopt(int(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0)
    bad(std::string("not a socket (") + strerror(errno) + ")");
  if (!listening) bad("a socket that is not listening");
  sockaddr_in sa{};
  len = sizeof sa;
  if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&sa), &len) != 0 || sa.sin_family != AF_INET)
    bad("not an IPv4 TCP socket");
  if (ntohs(sa.sin_port) != id.port)
    bad("listening on port " + std::to_string(ntohs(sa.sin_port)) + ", but the root is " + root.str());
  char host[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
  if (sa.sin_addr.s_addr != htonl(INADDR_ANY) && root.host != host)
    bad("listening on " + std::string(host) + ":" + std::to_string(ntohs(sa.sin_port)) + ", but the root is " +
        root.str());
  // Ours now: the rank's own children must not inherit it.
  fcntl(int(fd), F_SETFD, FD_CLOEXEC);
  logDebug("rendezvous: accepting on the root socket handed down (%s=%ld, %s)", kVar, fd, root.str().c_str());
  return Fd(int(fd));
}

} // namespace hetccl
