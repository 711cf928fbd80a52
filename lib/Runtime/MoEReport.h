//===- MoEReport.h - expert choices a run dropped ----------------*- C++ -*-===//
//
// A mixture-of-experts layer with a capacity drops the choices past each
// expert's rows (HetMoEOps.td). Each forward het.moe_dispatch adds its
// choices and drops here; the executable reports them at the end of the run
// ("moe: ... expert choices dropped"), so a user sees what a capacity
// factor costs.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_MOEREPORT_H
#define HET_LIB_RUNTIME_MOEREPORT_H

#include <cstdint>
#include <string>

namespace het::rt {

void countExpertChoices(int64_t routed, int64_t dropped);

/// "D of R expert choices dropped by capacity (P %)", or empty when the run
/// routed none.
std::string moeReport();

} // namespace het::rt

#endif // HET_LIB_RUNTIME_MOEREPORT_H
