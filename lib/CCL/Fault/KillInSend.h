//===- KillInSend.h - SIGKILL this process mid-message ----------*- C++ -*-===//
//
// The transport side of hetcclFaultKillInNextSend: senders ask how much of a
// message they may write (an armed kill cuts the write at half the payload)
// and report what they wrote.
//
//===----------------------------------------------------------------------===//
#ifndef HETCCL_FAULT_KILLINSEND_H
#define HETCCL_FAULT_KILLINSEND_H

#include <cstddef>

namespace hetccl::fault {

/// How much of `want` bytes to write of a `total`-byte message of which
/// `sent` have left: all of them, unless an armed kill stops at half.
size_t allowedWrite(size_t want, size_t sent, size_t total);

/// `sent` of the `total` payload bytes of a message to `peer` have left;
/// kills the process when an armed kill's half is reached.
void wrotePayload(size_t sent, size_t total, int peer);

} // namespace hetccl::fault

#endif
