// What the tests of the board all-reduces (OneShotTest.cpp, TwoShotTest.cpp)
// share: inputs whose sum depends on the order of the adds, the rank-order
// sum every rank must get bit for bit, and a rank body that checks a
// SIGKILLed peer ends the others' waits with an error.
#pragma once

#include "het-c/hetccl.h"

#include <cstddef>
#include <vector>

namespace hetccltest {

// Rank r's input for call k: floats of mixed magnitudes.
std::vector<float> orderSensitiveInput(int r, int k, size_t count);

// ((x0 + x1) + x2) ... of the n ranks' inputs for call k.
std::vector<float> rankOrderSum(int n, int k, size_t count);

// A rank body for 3 ranks: an all-reduce of `count` floats, then rank 2
// kills itself and the others' next all-reduce must fail (system or remote
// error) within 5 s of a 20 s timeout. Run with rank 2 allowed to hang.
int peerKilledBetweenCalls(int rank, int n, const hetcclUniqueId& id, size_t count);

} // namespace hetccltest
