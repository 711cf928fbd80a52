#include "Common/Error.h"

#include <cerrno>
#include <cstring>

namespace hetccl {

void fail(hetcclResult_t result, const std::string& msg) { throw CclError(result, msg); }

void failErrno(const std::string& msg) {
  int e = errno;
  throw CclError(hetcclSystemError, msg + ": " + std::strerror(e));
}

} // namespace hetccl
