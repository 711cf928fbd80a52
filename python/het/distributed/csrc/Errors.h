// How hetccl's result codes surface in PyTorch: as the exceptions
// torch.distributed users already catch.
#pragma once

#include "het-c/hetccl.h"

#include <string>

namespace het::torchccl {

// Throws for any result but hetcclSuccess, with hetccl's own message for the
// calling thread: an invalid argument of this rank's call as ValueError,
// everything about the job (ranks that disagree on a collective, timeouts,
// dead peers, aborts, a missing device runtime) as
// torch.distributed.DistBackendError (a RuntimeError).
[[noreturn]] void throwHetcclError(hetcclResult_t result, hetcclComm_t comm, const std::string& what);

inline void check(hetcclResult_t result, hetcclComm_t comm, const std::string& what) {
  if (result != hetcclSuccess) throwHetcclError(result, comm, what);
}

} // namespace het::torchccl
