//===- CoreBinding.h - which CPUs a rank on a shared host runs on -*- C++ -*-===//
//
// Ranks left to the scheduler on a host they outnumber run at its whim:
// four pipeline ranks on two cores land two to a core, and whether both
// replicas of a stage share one core (and can never compute at once) or
// sit on different ones changes from run to run -- the digits MLP's 2x2
// pipeline took 0.70-1.00 ms per step unbound, 0.67-0.74 ms bound round
// robin (2026-12-04, 2-core EPYC VM). So het-run binds each rank as
// mpirun --bind-to core does, by its local rank, and tells it the CPUs it
// had (HET_BIND_CPUS); a pipeline rank then binds itself again by its
// place in the plan: working ranks stage by stage first (the replicas of a
// stage, and neighbouring stages, on different cores), idle ones after.
// The rule for the k-th of n ranks over c CPUs: with n >= c, CPU k mod c;
// with fewer, an equal block of c / n CPUs each, for the rank's threads.
// The planner's shared-core schedule (lib/Plan/SharedHostSchedule.cpp)
// assumes the same.
//
//===----------------------------------------------------------------------===//
#ifndef HET_SUPPORT_COREBINDING_H
#define HET_SUPPORT_COREBINDING_H

#include <string>
#include <vector>

namespace het::support {

/// The CPUs the `index`-th of `count` ranks gets out of `allowed` (the
/// CPUs the job may use, ascending).
std::vector<int> coresOfRank(const std::vector<int> &allowed, int index, int count);

/// The CPUs the calling process may run on, ascending.
std::vector<int> allowedCpus();

/// Binds the calling process to `cpus`. Returns "" or why it could not.
std::string bindProcess(const std::vector<int> &cpus);

/// "0,1,4" and back; parseCpuList returns {} for a malformed list.
std::string formatCpuList(const std::vector<int> &cpus);
std::vector<int> parseCpuList(const std::string &text);

/// The variable het-run passes the job's CPUs in.
inline const char *bindCpusVariable() { return "HET_BIND_CPUS"; }

} // namespace het::support

#endif
