//===- CoreBinding.h - which cores a local rank runs on -------*- C++ -*-===//
//
// Ranks left to the scheduler on a host they outnumber run at its whim:
// four pipeline ranks on two cores land two to a core, and whether both
// replicas of a stage share one core (and can never compute at once) or
// sit on different ones changes from run to run -- the digits MLP's 2x2
// pipeline took 0.70-1.00 ms per step unbound, 0.67-0.74 ms bound round
// robin (2026-12-04, 2-core EPYC VM). So het-run binds each rank, as
// mpirun --bind-to core does: with more ranks than the CPUs het-run may
// use, local rank r gets CPU r mod n (consecutive ranks, i.e. the replicas
// of one stage, on different cores); with fewer, an equal block of CPUs
// each, for the rank's threads.
//
//===----------------------------------------------------------------------===//
#ifndef HETRUN_COREBINDING_H
#define HETRUN_COREBINDING_H

#include <string>
#include <vector>

namespace hetrun {

/// The CPUs local rank `local` of `nranks` gets out of `allowed` (the
/// CPUs this process may run on, ascending).
std::vector<int> coresOfRank(const std::vector<int> &allowed, int local, int nranks);

/// The CPUs the calling process may run on.
std::vector<int> allowedCpus();

/// Binds the calling process (a rank about to exec) to coresOfRank(...).
/// Returns "" or why it could not (the rank then runs unbound).
std::string bindRank(int local, int nranks);

} // namespace hetrun

#endif
