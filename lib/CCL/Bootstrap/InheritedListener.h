// The root's listening socket, handed down by the launcher.
//
// A launcher that picks a free port and lets rank 0 bind it later races with
// every other process on the host: between the pick and the bind, any
// connect() may take the port as its source (it is in the ephemeral range
// when the kernel picked it), and rank 0 then fails with "Address already in
// use". het-run closes that window by binding and listening itself, and
// passing the socket to rank 0 as HETCCL_ROOT_FD (it was taken so in one CI
// run, by a parallel test). Connections that arrive before rank 0 accepts
// wait in the socket's backlog.
#pragma once

#include "Bootstrap/UniqueId.h"
#include "Net/Socket.h"

namespace hetccl {

// For rank 0 of a communicator whose root is the one the environment names
// (HETCCL_ROOT, or MASTER_ADDR/MASTER_PORT): the socket HETCCL_ROOT_FD names,
// checked to be a TCP socket listening on the root's port, and marked
// close-on-exec. Empty when the variable is unset, was taken by an earlier
// communicator of this process, or this communicator's root is another.
// Throws hetcclInvalidArgument naming the variable and the problem when
// HETCCL_ROOT_FD is set for this root but is not such a socket.
Fd takeInheritedRootListener(const IdData& id);

} // namespace hetccl
