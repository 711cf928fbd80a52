//===- Inventory.cpp - what a provider can rent out -------------------------===//
#include "het/Plan/Inventory.h"
#include "JsonUtil.h"

#include <set>

namespace het::plan {
using namespace json_util;

Inventory loadInventory(const std::string &path, const DeviceCatalog &catalog) {
  Inventory inv;
  inv.file = path;
  inv.spec = readFile(path);
  inv.name = string(inv.spec, "name", path, "");
  json &nodes = inv.spec["nodes"];
  array(inv.spec, "nodes", path, "");
  for (size_t n = 0; n < nodes.size(); ++n) {
    json &node = nodes[n];
    const std::string at = join("nodes", n);
    const json &devices = array(node, "devices", path, at);
    if (devices.size() != 1)
      fail(path, join(at, "devices"),
           "an inventory's node template offers one kind of device (split the template)");
    json &dev = node["devices"][0];
    const std::string dat = join(join(at, "devices"), 0);
    if (dev.contains("market"))
      fail(path, join(dat, "market"), "an inventory lists the markets it offers as \"markets\"");
    InventoryOffer offer;
    offer.name = stringOr(node, "name", "template " + std::to_string(n), path, at);
    offer.group = string(dev, "group", path, dat);
    offer.kind = string(dev, "kind", path, dat);
    offer.maxNodes = int(integer(node, "count", path, at, 1));
    offer.devicesPerNode = int(integer(dev, "count", path, dat, 1));
    const DeviceSpec *spec = catalog.find(offer.kind);
    if (spec) {
      offer.onDemandPrice = dev.contains("price_per_hour")
                                ? positive(dev, "price_per_hour", path, dat)
                                : spec->price.onDemand;
      offer.spotPrice = dev.contains("spot_price_per_hour")
                            ? positive(dev, "spot_price_per_hour", path, dat)
                            : spec->price.spot;
    }
    if (dev.contains("markets")) {
      const json &markets = array(dev, "markets", path, dat);
      offer.onDemand = offer.spot = false;
      for (size_t i = 0; i < markets.size(); ++i) {
        std::string m = markets[i].is_string() ? markets[i].get<std::string>() : "";
        if (m != "on_demand" && m != "spot")
          fail(path, join(join(dat, "markets"), i), "must be \"on_demand\" or \"spot\"");
        (m == "spot" ? offer.spot : offer.onDemand) = true;
      }
      if (spec && offer.spot && offer.spotPrice <= 0)
        fail(path, join(dat, "markets"),
             "spot is offered but kind '" + offer.kind +
                 "' has no spot price in the device catalog; give \"spot_price_per_hour\"");
    } else {
      offer.spot = offer.spotPrice > 0;
    }
    if (spec && offer.onDemand && offer.onDemandPrice <= 0)
      fail(path, dat,
           "kind '" + offer.kind +
               "' has no on-demand price in the device catalog; give \"price_per_hour\", or "
               "\"markets\": [\"spot\"] with a spot price");
    inv.offers.push_back(offer);
    dev.erase("markets");
    dev.erase("spot_price_per_hour");
  }
  // The whole offer must be a valid cluster (unknown kinds, links, zones).
  parseCluster(inv.clusterSpec(std::vector<int>(inv.offers.size(), -1),
                               std::vector<bool>(inv.offers.size(), false)),
               path, catalog);
  return inv;
}

json Inventory::clusterSpec(const std::vector<int> &nodes, const std::vector<bool> &spot) const {
  json out = spec;
  out["nodes"] = json::array();
  std::set<std::string> zones;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (nodes[i] == 0)
      continue;
    json node = spec["nodes"][i];
    if (nodes[i] > 0)
      node["count"] = nodes[i];
    json &dev = node["devices"][0];
    // The market chosen, at the inventory's price for it.
    if (spot[i] && offers[i].spot) {
      dev["market"] = "spot";
      dev["price_per_hour"] = offers[i].spotPrice;
    } else if (!offers[i].onDemand) {
      dev["market"] = "spot";
      dev["price_per_hour"] = offers[i].spotPrice;
    }
    if (node.contains("zone") && node["zone"].is_string())
      zones.insert(node["zone"].get<std::string>());
    out["nodes"].push_back(node);
  }
  // Routes between zones no rented node is in would name missing zones.
  if (out.contains("network") && out["network"].contains("zones") &&
      out["network"]["zones"].is_array()) {
    json kept = json::array();
    for (const json &z : out["network"]["zones"]) {
      bool present = z.contains("between") && z["between"].is_array();
      if (present)
        for (const json &name : z["between"])
          present &= name.is_string() && zones.count(name.get<std::string>());
      if (present)
        kept.push_back(z);
    }
    out["network"]["zones"] = kept;
  }
  return out;
}

} // namespace het::plan
