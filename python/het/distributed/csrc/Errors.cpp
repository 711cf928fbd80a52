#include "Errors.h"

#include <c10/util/Exception.h>

namespace het::torchccl {

void throwHetcclError(hetcclResult_t result, hetcclComm_t comm, const std::string& what) {
  std::string message = "hetccl " + what + ": " + hetcclGetErrorString(result);
  std::string detail = hetcclGetLastError(comm);
  if (!detail.empty()) message += ": " + detail;
  switch (result) {
  case hetcclInvalidArgument: // this rank's own call was wrong
    TORCH_CHECK_VALUE(false, message);
  default:
    C10_THROW_ERROR(DistBackendError, message);
  }
}

} // namespace het::torchccl
