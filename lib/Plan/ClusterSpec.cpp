//===- ClusterSpec.cpp - parse and validate cluster specs -----------------===//
#include "het/Plan/ClusterSpec.h"
#include "JsonUtil.h"

#include <algorithm>
#include <map>
#include <set>

namespace het::plan {
using namespace json_util;

static Link parseLink(const json &j, const std::string &file,
                      const std::string &at) {
  Link l;
  l.type = string(j, "type", file, at);
  l.bandwidthGbps = positive(j, "bandwidth_gbps", file, at);
  l.latencyUs = positive(j, "latency_us", file, at, /*allowZero=*/true);
  return l;
}

Cluster loadCluster(const std::string &path, const DeviceCatalog &catalog) {
  return parseCluster(readFile(path), path, catalog);
}

Cluster parseCluster(const json &spec, const std::string &file,
                     const DeviceCatalog &catalog) {
  Cluster c;
  c.file = file;
  c.name = string(spec, "name", file, "");
  const json &nodes = array(spec, "nodes", file, "");
  std::map<std::string, int> groupIndex;
  // Links declared inside a node template, by (group, group).
  std::map<std::pair<int, int>, Link> local;

  for (size_t n = 0; n < nodes.size(); ++n) {
    const json &node = nodes[n];
    std::string at = join("nodes", n);
    int nodeCount = int(integer(node, "count", file, at, 1));
    const json &devices = array(node, "devices", file, at);
    std::set<std::string> here;
    for (size_t d = 0; d < devices.size(); ++d) {
      const json &dev = devices[d];
      std::string dat = join(join(at, "devices"), d);
      DeviceGroup g;
      g.name = string(dev, "group", file, dat);
      g.kind = string(dev, "kind", file, dat);
      g.devicesPerNode = int(integer(dev, "count", file, dat, 1));
      g.nodes = nodeCount;
      g.nodeTemplate = int(n);
      g.zone = stringOr(node, "zone", "", file, at);
      g.nicGbps = node.contains("nic_gbps") ? positive(node, "nic_gbps", file, at) : 0;
      if (dev.contains("node_labels")) {
        const json &labels = dev["node_labels"];
        if (!labels.is_object())
          fail(file, join(dat, "node_labels"), "must be an object of label: value strings");
        for (const auto &[key, value] : labels.items()) {
          if (!value.is_string() || key.empty())
            fail(file, join(join(dat, "node_labels"), key),
                 "must be a label name with a string value");
          g.nodeLabels[key] = value.get<std::string>();
        }
      }
      g.spec = catalog.find(g.kind);
      if (!g.spec) {
        std::string known;
        for (const auto &k : catalog.names())
          known += (known.empty() ? "" : ", ") + k;
        fail(file, join(dat, "kind"),
             "unknown device kind '" + g.kind + "' (the catalog has: " + known +
                 ")");
      }
      const std::string market = stringOr(dev, "market", "on_demand", file, dat);
      if (market != "on_demand" && market != "spot")
        fail(file, join(dat, "market"), "must be \"on_demand\" or \"spot\", not '" + market + "'");
      g.spot = market == "spot";
      if (dev.contains("price_per_hour"))
        g.pricePerHour = positive(dev, "price_per_hour", file, dat);
      else if (g.spot && g.spec->price.spot <= 0)
        fail(file, join(dat, "market"),
             "kind '" + g.kind + "' has no spot price in the device catalog (" + g.spec->file +
                 "); give the group a \"price_per_hour\"");
      else
        g.pricePerHour = g.spot ? g.spec->price.spot : g.spec->price.onDemand;
      if (groupIndex.count(g.name))
        fail(file, join(dat, "group"),
             "group '" + g.name +
                 "' is declared twice (a group lives on one node template)");
      groupIndex[g.name] = int(c.groups.size());
      here.insert(g.name);
      c.groups.push_back(g);
    }
    if (node.contains("links")) {
      const json &links = array(node, "links", file, at, false);
      for (size_t l = 0; l < links.size(); ++l) {
        std::string lat = join(join(at, "links"), l);
        const json &between = array(links[l], "between", file, lat);
        if (between.size() != 2 || !between[0].is_string() ||
            !between[1].is_string())
          fail(file, join(lat, "between"), "must be two group names");
        std::string a = between[0], b = between[1];
        for (const auto &name : {a, b})
          if (!here.count(name))
            fail(file, join(lat, "between"),
                 "names group '" + name + "', which is not on this node");
        Link link = parseLink(links[l], file, lat);
        int ia = groupIndex[a], ib = groupIndex[b];
        local[{ia, ib}] = local[{ib, ia}] = link;
      }
    }
  }

  // Bandwidth between zones: measured pairs differ by far more than one
  // figure for the whole network can say.
  std::map<std::pair<std::string, std::string>, Link> betweenZones;
  double oversubscription = 1;
  if (spec.contains("network")) {
    c.network = parseLink(spec["network"], file, "network");
    c.hasNetwork = true;
    const json &net = spec["network"];
    oversubscription = numberOr(net, "oversubscription", 1, file, "network");
    if (oversubscription < 1)
      fail(file, "network.oversubscription",
           "must be >= 1 (uplink capacity divides by it between zones)");
    std::set<std::string> zones;
    for (const auto &g : c.groups)
      if (!g.zone.empty())
        zones.insert(g.zone);
    if (net.contains("zones")) {
      const json &pairs = array(net, "zones", file, "network", false);
      for (size_t i = 0; i < pairs.size(); ++i) {
        std::string at = join("network.zones", i);
        const json &between = array(pairs[i], "between", file, at);
        if (between.size() != 2 || !between[0].is_string() || !between[1].is_string())
          fail(file, join(at, "between"), "must be two zone names");
        std::string a = between[0], b = between[1];
        for (const auto &z : {a, b})
          if (!zones.count(z))
            fail(file, join(at, "between"),
                 "names zone '" + z + "', which no node template is in");
        if (betweenZones.count({a, b}))
          fail(file, join(at, "between"), "zones '" + a + "' and '" + b + "' are given twice");
        Link l = parseLink(pairs[i], file, at);
        betweenZones[{a, b}] = betweenZones[{b, a}] = l;
      }
    }
  } else {
    for (size_t n = 0; n < nodes.size(); ++n)
      for (const char *key : {"nic_gbps", "zone"})
        if (nodes[n].contains(key))
          fail(file, join(join("nodes", n), key), "needs a \"network\" to connect the nodes");
  }

  size_t k = c.groups.size();
  if (c.hasNetwork) {
    c.crossNode.assign(k, std::vector<Link>(k));
    for (auto &g : c.groups)
      if (g.nicGbps <= 0)
        g.nicGbps = c.network.bandwidthGbps;
    for (size_t a = 0; a < k; ++a)
      for (size_t b = 0; b < k; ++b) {
        const DeviceGroup &ga = c.groups[a], &gb = c.groups[b];
        Link route = c.network;
        auto pair = betweenZones.find({ga.zone, gb.zone});
        if (pair != betweenZones.end())
          route = pair->second;
        else if (ga.zone != gb.zone)
          route.bandwidthGbps /= oversubscription;
        route.bandwidthGbps = std::min({route.bandwidthGbps, ga.nicGbps, gb.nicGbps});
        c.crossNode[a][b] = route;
      }
  }
  c.links.assign(k, std::vector<Link>(k));
  c.overNetwork.assign(k, std::vector<bool>(k, false));
  for (size_t a = 0; a < k; ++a) {
    const DeviceGroup &ga = c.groups[a];
    if (ga.nodes > 1 && !c.hasNetwork)
      fail(file, "network",
           "missing, but group '" + ga.name + "' spans " +
               std::to_string(ga.nodes) + " nodes");
    for (size_t b = 0; b < k; ++b) {
      auto it = local.find({int(a), int(b)});
      if (it != local.end()) {
        c.links[a][b] = it->second;
      } else if (a == b) {
        // No declared fabric: the catalog's intra-node link of the kind.
        c.links[a][a] = Link{ga.spec->intraNodeLinkType,
                             ga.spec->intraNodeLinkGBs * 8, 2.0};
      } else if (c.hasNetwork) {
        c.links[a][b] = c.crossNode[a][b];
        c.overNetwork[a][b] = true;
      } else {
        fail(file, "network",
             "no route between groups '" + ga.name + "' and '" +
                 c.groups[b].name +
                 "': no link between them on a node and no network");
      }
    }
  }
  return c;
}

Cluster Cluster::subset(const std::vector<int> &keep) const {
  Cluster s;
  s.name = name;
  s.file = file;
  s.hasNetwork = hasNetwork;
  s.network = network;
  for (int g : keep)
    s.groups.push_back(groups[g]);
  s.links.assign(keep.size(), std::vector<Link>(keep.size()));
  s.overNetwork.assign(keep.size(), std::vector<bool>(keep.size()));
  if (hasNetwork)
    s.crossNode.assign(keep.size(), std::vector<Link>(keep.size()));
  for (size_t a = 0; a < keep.size(); ++a)
    for (size_t b = 0; b < keep.size(); ++b) {
      s.links[a][b] = links[keep[a]][keep[b]];
      s.overNetwork[a][b] = overNetwork[keep[a]][keep[b]];
      if (hasNetwork)
        s.crossNode[a][b] = crossNode[keep[a]][keep[b]];
    }
  return s;
}

std::vector<std::string> Cluster::kindNames() const {
  std::vector<std::string> out;
  for (const auto &g : groups)
    if (std::find(out.begin(), out.end(), g.spec->name) == out.end())
      out.push_back(g.spec->name);
  return out;
}

int Cluster::deviceCount() const {
  int n = 0;
  for (const auto &g : groups)
    n += g.count();
  return n;
}

} // namespace het::plan
