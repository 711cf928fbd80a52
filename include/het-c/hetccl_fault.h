/* hetccl fault injection: testing aids, not part of the collective API.
 *
 * Recovery tests need a rank to die *inside* a collective or a transfer,
 * with part of a message on the wire, not only between steps. These calls
 * arm such a death; nothing happens unless a program calls them.
 */
#ifndef HET_C_HETCCL_FAULT_H
#define HET_C_HETCCL_FAULT_H

#include <stdint.h>

#include "het-c/hetccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Halfway through the payload of the next message this process sends
 * through any hetccl transport (a collective's or a point-to-point call's),
 * print one line to stderr naming the message (peer, bytes sent of its
 * size) and SIGKILL this process: the peer holds the first half of the
 * message and waits for the rest. armed = 0 disarms. */
hetcclResult_t hetcclFaultKillInNextSend(int armed);

#ifdef __cplusplus
}
#endif

#endif
