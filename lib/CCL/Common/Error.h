// Internal error type. Library code throws CclError with a result code and a
// message naming the problem (which peer, which argument); the C API catches
// it at the boundary, records the message for hetcclGetLastError and returns
// the code. Exceptions never cross the C boundary.
#pragma once

#include "het-c/hetccl.h"

#include <stdexcept>
#include <string>

namespace hetccl {

class CclError : public std::runtime_error {
public:
  CclError(hetcclResult_t result, const std::string& msg) : std::runtime_error(msg), result_(result) {}
  hetcclResult_t result() const { return result_; }

private:
  hetcclResult_t result_;
};

[[noreturn]] void fail(hetcclResult_t result, const std::string& msg);
// Throws hetcclSystemError with msg and strerror(errno).
[[noreturn]] void failErrno(const std::string& msg);

} // namespace hetccl
