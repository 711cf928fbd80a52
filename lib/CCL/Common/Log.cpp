#include "Common/Log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace hetccl {

static int gRank = -1;

void setLogRank(int rank) { gRank = rank; }

static void vlog(const char* level, const char* fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  char line[1200];
  int n = snprintf(line, sizeof line, "hetccl[%d pid %d] %s: %s\n", gRank, int(getpid()), level, msg);
  // One write() so lines from concurrent ranks do not interleave.
  if (n > 0) {
    ssize_t w = write(2, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
    (void)w;
  }
}

void logWarn(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog("WARN", fmt, ap);
  va_end(ap);
}

void logDebug(const char* fmt, ...) {
  static int enabled = [] {
    const char* v = getenv("HETCCL_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
  }();
  if (!enabled) return;
  va_list ap;
  va_start(ap, fmt);
  vlog("DEBUG", fmt, ap);
  va_end(ap);
}

} // namespace hetccl
