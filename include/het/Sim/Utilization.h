//===- Utilization.h - achieved over stand-alone throughput ------*- C++ -*-===//
//
// HETHUB's measure of a heterogeneous job: the job's throughput over the sum
// of what each of its devices would train alone (samples per second of the
// whole model on one device, by the same cost model, memory ignored).
// Unlike MFU it needs no FLOP count and stays meaningful when devices of
// very different speeds work together.
//
//===----------------------------------------------------------------------===//
#ifndef HET_SIM_UTILIZATION_H
#define HET_SIM_UTILIZATION_H

#include "het/Plan/CostModel.h"

namespace het::sim {

struct Utilization {
  double achieved = 0;    // samples per second of the job
  double standAlone = 0;  // sum over the plan's devices
  double ratio = 0;       // achieved / standAlone
  double clusterStandAlone = 0; // sum over every device of the cluster
  double clusterRatio = 0;
};

/// Utilization of `plan` at `iterationSeconds` per iteration. A device's
/// stand-alone throughput is at the micro-batch its stage gives it.
Utilization utilization(const het::plan::CostModel &cost, const het::plan::Plan &plan,
                        double iterationSeconds);

/// Samples per second one device of group `g` trains the whole model alone
/// at micro-batch `mbs` (forward, backward and optimizer step per batch).
double standAloneThroughput(const het::plan::CostModel &cost, int g, int mbs);

} // namespace het::sim

#endif
