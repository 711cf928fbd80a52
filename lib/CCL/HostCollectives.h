// The collectives on buffers in host memory (HostCollectives.cpp): each
// picks its algorithm (the communicator's, or `auto`'s choice) and runs it
// over the communicator's transports. Arguments are checked by the API
// (Api.cpp), which stages device buffers through host memory around them.
#pragma once

#include "Comm.h"
#include "Types/DataType.h"

#include <vector>

namespace hetccl {

// `key` identifies the call site for top-k's error feedback (the user's
// receive buffer).
void hostAllReduce(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op,
                   const void* key);
void hostAllGather(hetcclComm* c, const void* send, void* recv, size_t sendcount, hetcclDataType_t dt);
void hostReduceScatter(hetcclComm* c, const void* send, void* recv, size_t recvcount, hetcclDataType_t dt,
                       hetcclRedOp_t op);
// The V collectives' block bounds: rank r's block is [bounds[r], bounds[r+1]).
std::vector<size_t> boundsOf(const std::vector<size_t>& counts);
void hostAllGatherV(hetcclComm* c, const void* send, void* recv, const std::vector<size_t>& counts,
                    hetcclDataType_t dt);
void hostReduceScatterV(hetcclComm* c, const void* send, void* recv, const std::vector<size_t>& counts,
                        hetcclDataType_t dt, hetcclRedOp_t op);
void hostBroadcast(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt, int root);
void hostReduce(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt, hetcclRedOp_t op,
                int root);
void hostAllToAll(hetcclComm* c, const void* send, void* recv, size_t count, hetcclDataType_t dt);
// Counts and offsets in elements (Algorithms/AllToAllV.cpp).
void hostAllToAllV(hetcclComm* c, const void* send, const std::vector<size_t>& sendCounts,
                   const std::vector<size_t>& sendOffsets, void* recv, const std::vector<size_t>& recvCounts,
                   const std::vector<size_t>& recvOffsets, hetcclDataType_t dt);

} // namespace hetccl
