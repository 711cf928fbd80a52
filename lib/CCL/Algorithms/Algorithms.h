// Collective algorithms over host memory. Each works on a list of member
// ranks (all ranks, or a subset for the hierarchical algorithm's phases)
// and on one buffer in place; the API layer (Api.cpp) copies user buffers
// in and out and finishes Avg. Chunk k of a buffer of `count` elements split
// among p members is [count*k/p, count*(k+1)/p).
#pragma once

#include "Comm.h"
#include "Types/DataType.h"

#include <vector>

namespace hetccl {

struct Members {
  std::vector<int> ranks; // in algorithm order
  int me = 0;             // my index in ranks
  int size() const { return int(ranks.size()); }
};
Members allMembers(const hetcclComm* c);
Members membersOf(const hetcclComm* c, const std::vector<int>& ranks);

struct Elem {
  hetcclDataType_t dt;
  hetcclRedOp_t op;
  size_t size;
  ReduceFn fn;
};
Elem elemOf(hetcclDataType_t dt, hetcclRedOp_t op);

inline size_t chunkBegin(size_t count, int k, int p) { return size_t((unsigned __int128)count * k / p); }

// Algorithms/Ring.cpp
void ringAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);
// After: member i holds the reduced chunk i (other chunks are scratch).
void ringReduceScatter(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);
// Before: member i holds chunk i. After: every chunk everywhere.
void ringAllGather(hetcclComm* c, const Members& m, char* buf, size_t count, size_t elemSize);
// The same with member k's chunk [bounds[k], bounds[k+1]) (p + 1 bounds,
// chunks may be empty): hetcclReduceScatterV and hetcclAllGatherV.
void ringReduceScatterV(hetcclComm* c, const Members& m, char* buf, const size_t* bounds, const Elem& e);
void ringAllGatherV(hetcclComm* c, const Members& m, char* buf, const size_t* bounds, size_t elemSize);
// Pipelined chain from member `root`.
void chainBroadcast(hetcclComm* c, const Members& m, char* buf, size_t bytes, int root);

// Algorithms/Tree.cpp (binomial trees)
void treeReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e, int root);
void treeBroadcast(hetcclComm* c, const Members& m, char* buf, size_t bytes, int root);
void treeAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);

// Algorithms/HalvingDoubling.cpp
void hdAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);
// Power-of-two member counts only (callers fall back to ring otherwise).
void hdReduceScatter(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);
void hdAllGather(hetcclComm* c, const Members& m, char* buf, size_t count, size_t elemSize);

// Algorithms/ParameterServer.cpp (sharded: member i serves chunk i)
void psReduceScatter(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);
void psAllGather(hetcclComm* c, const Members& m, char* buf, size_t count, size_t elemSize);
void psAllReduce(hetcclComm* c, const Members& m, char* buf, size_t count, const Elem& e);

// Algorithms/OneShot.cpp (small messages, every rank on one host)
bool oneShotApplies(const hetcclComm* c, size_t bytes);
// Reads `send` and writes `recv` (the same buffer in place): no copy of the
// input into recv first.
void oneShotAllReduce(hetcclComm* c, const char* send, char* recv, size_t count, const Elem& e);

// Algorithms/TwoShot.cpp (reduce-scatter + all-gather through the boards,
// every rank on one host, any size in board-sized chunks)
bool twoShotApplies(const hetcclComm* c);
// Whether `auto` runs it (above the one-shot limit): with three or more
// ranks always; with two below and above the ring's sizes (ShmBoard.h).
bool twoShotWins(const hetcclComm* c, size_t bytes);
// Reads `send` and writes `recv` (the same buffer in place).
void twoShotAllReduce(hetcclComm* c, const char* send, char* recv, size_t count, const Elem& e);

// Algorithms/AllToAllV.cpp: block r of `send` (sendBytes[r] at
// sendOffsets[r]) to rank r, block r of `recv` from it; pairwise frames,
// single-copy reads between ranks of one host for large blocks.
void allToAllV(hetcclComm* c, const char* send, const std::vector<size_t>& sendBytes,
               const std::vector<size_t>& sendOffsets, char* recv, const std::vector<size_t>& recvBytes,
               const std::vector<size_t>& recvOffsets);

// Algorithms/Hierarchical.cpp (groups by host and device kind)
void hierAllReduce(hetcclComm* c, char* buf, size_t count, const Elem& e);

// Algorithms/Tuned.cpp: the tuning database's choices (HETCCL_TUNING_DB),
// read by rank 0 at init and sent to every rank so that all agree.
void loadTunedAllReduce(hetcclComm* c, Rendezvous& rv, const Deadline& dl);
// This communicator's all-reduce key in the database, up to the size.
std::string tuningKey(const hetcclComm* c);
// The algorithm an all-reduce of `bytes` runs: the set one; for auto the
// tuned choice, else (every rank on this host) one-shot up to its limit and
// two-shot above, else the cost table (oneshot where the board cannot hold
// the message and twoshot without a board: auto's choice).
hetcclAlgo_t allReduceAlgorithm(const hetcclComm* c, size_t bytes);

// Algorithms/Select.cpp: the cost table behind `auto`.
hetcclAlgo_t pickAllReduce(const hetcclComm* c, size_t bytes);

} // namespace hetccl
