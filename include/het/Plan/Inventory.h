//===- Inventory.h - what a provider can rent out ---------------*- C++ -*-===//
//
// An inventory is a cluster spec (examples/clusters/README.md) read as an
// offer: each node template's `count` is the most nodes available, its one
// device entry says on which markets they can be rented (`markets`:
// "on_demand", "spot"; by default on-demand, and spot where a spot price is
// known), at the catalog's prices or the entry's `price_per_hour` and
// `spot_price_per_hour`. het-plan --inventory picks what to rent from it
// (het/Sim/HardwareMix.h).
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_INVENTORY_H
#define HET_PLAN_INVENTORY_H

#include "het/Plan/ClusterSpec.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace het::plan {

struct InventoryOffer {
  std::string name, group, kind; // node template, its device group and kind
  int maxNodes = 0, devicesPerNode = 0;
  bool onDemand = true, spot = false; // markets offered
  double onDemandPrice = 0, spotPrice = 0; // USD per device-hour
};

struct Inventory {
  std::string name, file;
  nlohmann::json spec; // as written, `markets` and spot prices taken out
  std::vector<InventoryOffer> offers;

  /// The cluster spec renting nodes[i] nodes of offer i (0: none), on the
  /// spot market where spot[i].
  nlohmann::json clusterSpec(const std::vector<int> &nodes, const std::vector<bool> &spot) const;
};

/// Reads and checks an inventory: the cluster spec itself (at every offer's
/// full count), one device entry per node template, the markets and that
/// each offered market has a price. Errors name the file and the field.
Inventory loadInventory(const std::string &path, const DeviceCatalog &catalog);

} // namespace het::plan

#endif
