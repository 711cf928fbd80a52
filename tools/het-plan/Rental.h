//===- Rental.h - het-plan --inventory: what to rent --------------------===//
#ifndef HET_TOOLS_HETPLAN_RENTAL_H
#define HET_TOOLS_HETPLAN_RENTAL_H

#include "het/Sim/HardwareMix.h"

#include <ostream>
#include <string>

namespace het::plan {

/// Recommends what to rent from `inventory` (het/Sim/HardwareMix.h) and
/// prints it (a table, or JSON); writes the best mix's plan and cluster
/// spec when paths are given. Returns the exit code: 0, or 3 when no mix
/// meets the deadline.
int printRental(std::ostream &os, const Inventory &inventory, const ModelDesc &model,
                const DeviceCatalog &catalog, const sim::MixOptions &options, bool asJson,
                const std::string &writePlanPath, const std::string &writeClusterPath);

} // namespace het::plan

#endif
