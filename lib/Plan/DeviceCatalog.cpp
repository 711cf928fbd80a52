//===- DeviceCatalog.cpp - load device specs from data files --------------===//
#include "het/Plan/DeviceCatalog.h"
#include "JsonUtil.h"
#include "het/Support/InstallLayout.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace het::plan {
using namespace json_util;

static std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

double DeviceSpec::flops(const std::string &dtype) const {
  auto get = [&](const std::string &t) -> double {
    auto it = peakTflops.find(t);
    return it == peakTflops.end() ? 0.0 : it->second;
  };
  double peak = get(dtype);
  if (peak <= 0 && dtype == "bf16")
    peak = get("fp16");
  if (peak <= 0 && dtype == "fp16")
    peak = get("bf16");
  if (peak <= 0)
    peak = get("fp32");
  return peak * 1e12 * computeEfficiency;
}

double DeviceSpec::memoryBytesPerSecond() const {
  return memoryBandwidthGBs * 1e9 * memoryEfficiency;
}

std::string DeviceCatalog::defaultDirectory() {
  // $HET_DEVICE_CATALOG, else share/het/devices of the tree this tool runs
  // from (installed, or the build tree, which links it to data/devices).
  InstalledPath catalog{"HET_DEVICE_CATALOG",
                        std::string(dataDirectoryBelowPrefix()) + "/devices", "",
                        "the device catalog"};
  std::vector<std::string> tried;
  std::string dir = locate(catalog, &tried);
  if (dir.empty())
    throw PlanError(whyNotFound(catalog, tried));
  return dir;
}

DeviceCatalog DeviceCatalog::loadDirectory(const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail(dir, "", "device catalog directory not found");
  std::vector<std::string> files;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json")
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty())
    fail(dir, "", "no *.json device files");
  DeviceCatalog catalog;
  for (const auto &f : files)
    catalog.loadFile(f);
  return catalog;
}

void DeviceCatalog::loadFile(const std::string &path, bool replace) {
  json doc = readFile(path);
  const json &devices = array(doc, "devices", path, "");
  for (size_t i = 0; i < devices.size(); ++i) {
    const json &d = devices[i];
    std::string at = join("devices", i);
    DeviceSpec s;
    s.file = path;
    s.name = string(d, "name", path, at);
    at = "devices[" + s.name + "]";
    s.vendor = string(d, "vendor", path, at);
    s.arch = string(d, "arch", path, at);
    s.source = string(d, "source", path, at);
    s.measured = boolOr(d, "measured", false, path, at);
    if (d.contains("aliases"))
      for (const auto &a : array(d, "aliases", path, at, false)) {
        if (!a.is_string())
          fail(path, join(at, "aliases"), "must list names, not " + a.dump());
        s.aliases.push_back(a.get<std::string>());
      }
    const json &peak = field(d, "peak_tflops", path, at);
    if (!peak.is_object() || peak.empty())
      fail(path, join(at, "peak_tflops"), "must be an object dtype -> TFLOP/s");
    for (auto it = peak.begin(); it != peak.end(); ++it)
      s.peakTflops[it.key()] =
          positive(peak, it.key(), path, join(at, "peak_tflops"), s.measured);
    s.memoryGib = positive(d, "memory_gib", path, at, s.measured);
    s.memoryBandwidthGBs =
        positive(d, "memory_bandwidth_gbs", path, at, s.measured);
    const json &link = field(d, "intra_node_link", path, at);
    s.intraNodeLinkType =
        string(link, "type", path, join(at, "intra_node_link"));
    s.intraNodeLinkGBs =
        positive(link, "bandwidth_gbs", path, join(at, "intra_node_link"));
    if (d.contains("efficiency")) {
      const json &e = d["efficiency"];
      s.computeEfficiency =
          numberOr(e, "compute", 0.5, path, join(at, "efficiency"));
      s.memoryEfficiency =
          numberOr(e, "memory", 0.7, path, join(at, "efficiency"));
      for (double f : {s.computeEfficiency, s.memoryEfficiency})
        if (f <= 0 || f > 1)
          fail(path, join(at, "efficiency"), "fractions must be in (0, 1]");
    }
    if (replace) {
      bool replaced = false;
      for (DeviceSpec &existing : specs)
        if (lower(existing.name) == lower(s.name)) {
          existing = s;
          replaced = true;
        }
      if (replaced)
        continue;
    } else if (find(s.name)) {
      fail(path, at,
           "device '" + s.name + "' is already defined in " +
               find(s.name)->file);
    }
    add(std::move(s));
  }
}

void DeviceCatalog::add(DeviceSpec spec) { specs.push_back(std::move(spec)); }

const DeviceSpec *DeviceCatalog::find(const std::string &name) const {
  std::string key = lower(name);
  for (auto &s : specs) {
    bool match = lower(s.name) == key;
    for (const auto &a : s.aliases)
      match = match || lower(a) == key;
    if (!match)
      continue;
    if (s.measured && s.peakTflops["fp32"] <= 0) {
      // One measurement per process: every measured kind is this machine's
      // CPU, and separate measurements would differ only by noise.
      static DeviceSpec local = measureLocalCpu(s);
      DeviceSpec named = s;
      named.peakTflops = local.peakTflops;
      named.memoryBandwidthGBs = local.memoryBandwidthGBs;
      named.memoryGib = local.memoryGib;
      named.computeEfficiency = local.computeEfficiency;
      named.memoryEfficiency = local.memoryEfficiency;
      s = named;
    }
    return &s;
  }
  return nullptr;
}

std::vector<std::string> DeviceCatalog::names() const {
  std::vector<std::string> out;
  for (const auto &s : specs)
    out.push_back(s.name);
  return out;
}

} // namespace het::plan
