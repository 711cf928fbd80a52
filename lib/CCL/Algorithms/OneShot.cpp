// One-shot all-reduce for small messages among ranks of one host: every
// rank copies its input once into the board of its own shm segment
// (Transport/ShmBoard.h), then reads every rank's input straight from the
// peers' boards and reduces them in rank order. One synchronisation step
// instead of 2 log2(p) or 2(p-1) message hops, no message headers, no
// allocation, and the same bits on every rank (the order is fixed, not the
// order of arrival). It reads (p-1) times the buffer where ring moves 2(p-1)/p
// of it, so it wins only below a crossover (ShmBoard.h; HETCCL_ONESHOT_BYTES).
//
// Waits are BoardCall.h's: spin, then yield, no system call while the data
// is already there.
#include "Algorithms/Algorithms.h"

#include "Algorithms/BoardCall.h"
#include "Transport/ShmBoard.h"

#include <cstring>

namespace hetccl {

bool oneShotApplies(const hetcclComm* c, size_t bytes) {
  // oneShotLimit is 0 unless every rank is on this host (Comm.cpp).
  return bytes != 0 && bytes <= c->oneShotLimit;
}

void oneShotAllReduce(hetcclComm* c, const char* send, char* recv, size_t count, const Elem& e) {
  const size_t bytes = count * e.size;
  const int p = c->nranks, me = c->rank;
  BoardCall call(c, "one-shot all-reduce");

  // Publish this rank's input.
  memcpy(call.data(me), send, bytes);
  call.publish(bytes, bytes);

  // Reduce every rank's input in rank order: ((x0 op x1) op x2) ...
  for (int r = 0; r < p; ++r) {
    const char* in = call.input(r, bytes, bytes);
    if (r == 0 && me == 0) {
      if (recv != send) memcpy(recv, send, bytes); // the same bits, from this core's cache
    } else if (r == 0) {
      memcpy(recv, in, bytes);
    } else {
      e.fn(recv, in, count);
    }
  }
  call.finish();
}

} // namespace hetccl
