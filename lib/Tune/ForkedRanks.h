//===- ForkedRanks.h - a hetccl job of forked local ranks -------*- C++ -*-===//
//
// The sweeps that time hetccl on this host (CollectiveSweep.cpp,
// MessageSweep.cpp) fork their ranks from the tuner: one unique id, one
// pipe that carries rank 0's report back, and every child's exit status
// checked.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_TUNE_FORKEDRANKS_H
#define HET_LIB_TUNE_FORKEDRANKS_H

#include "het-c/hetccl.h"

#include <functional>
#include <string>

namespace het::tune {

/// Forks `ranks` processes that each run `rank(id, r)` and returns what
/// rank 0's call returned. A rank that throws prints its message (naming
/// `what` and the rank) and exits non-zero; any rank that fails makes this
/// throw std::runtime_error listing them.
std::string runForkedRanks(int ranks, const std::string &what,
                           const std::function<std::string(const hetcclUniqueId &, int)> &rank);

} // namespace het::tune

#endif
