//===- RandomState.cpp - the counters the random kernels read -------------===//

#include "RandomState.h"

het::eval::RandomContext &hetrtRandomContext() {
  static het::eval::RandomContext context;
  return context;
}

// Generated dropout (lib/Conversion/HetToLinalg/DropoutToLinalg.cpp) reads
// the counters through these.
extern "C" int64_t hetrt_random_step() { return hetrtRandomContext().step; }
extern "C" int64_t hetrt_random_first_sample() { return hetrtRandomContext().firstSample; }
