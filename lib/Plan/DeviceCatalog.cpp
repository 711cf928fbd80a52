//===- DeviceCatalog.cpp - load device specs from data files --------------===//
#include "het/Plan/DeviceCatalog.h"
#include "het/Plan/NumberFormats.h"
#include "JsonUtil.h"
#include "het/Support/InstallLayout.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>

namespace het::plan {
using namespace json_util;

static std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

double DeviceSpec::flops(const std::string &format) const {
  auto it = peakTflops.find(format);
  double peak = it == peakTflops.end() ? 0.0 : it->second;
  return peak * 1e12 * computeEfficiency;
}

bool DeviceSpec::hasFormat(const std::string &format) const {
  auto it = peakTflops.find(format);
  return it != peakTflops.end() && it->second > 0;
}

std::vector<std::string> DeviceSpec::formats() const {
  std::vector<std::string> out;
  for (const char *f : {"fp32", "tf32", "bf16", "fp16", "fp8"})
    if (hasFormat(f))
      out.push_back(f);
  return out;
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

/// Dates are ISO days (YYYY-MM-DD): a figure without its day cannot be
/// judged for age.
static void checkDate(const std::string &date, const std::string &file,
                      const std::string &at) {
  static const std::regex iso(R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))");
  if (!std::regex_match(date, iso))
    fail(file, at, "'" + date + "' is not a date YYYY-MM-DD");
}

static DeviceSpec::Price parsePrice(const json &j, const std::string &file,
                                    const std::string &at) {
  if (!j.is_object())
    fail(file, at, "must be an object {on_demand, spot, source, date} (USD per device-hour)");
  DeviceSpec::Price p;
  p.onDemand = positive(j, "on_demand", file, at);
  p.spot = j.contains("spot") ? positive(j, "spot", file, at) : 0;
  if (p.spot > p.onDemand)
    fail(file, join(at, "spot"),
         "spot price " + std::to_string(p.spot) + " is above the on-demand price " +
             std::to_string(p.onDemand));
  p.source = string(j, "source", file, at);
  p.date = string(j, "date", file, at);
  checkDate(p.date, file, join(at, "date"));
  return p;
}

static DeviceSpec::Power parsePower(const json &j, const std::string &file,
                                    const std::string &at) {
  if (!j.is_object())
    fail(file, at, "must be an object {tdp_w, idle_w, frequency_power, source}");
  DeviceSpec::Power p;
  p.tdpWatts = positive(j, "tdp_w", file, at);
  p.idleWatts = j.contains("idle_w") ? positive(j, "idle_w", file, at) : 0;
  if (p.idleWatts >= p.tdpWatts)
    fail(file, join(at, "idle_w"), "idle power must be below the TDP");
  p.source = string(j, "source", file, at);
  if (j.contains("frequency_power")) {
    const json &curve = array(j, "frequency_power", file, at);
    std::string cat = join(at, "frequency_power");
    for (size_t i = 0; i < curve.size(); ++i) {
      const json &point = curve[i];
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() ||
          !point[1].is_number())
        fail(file, join(cat, i), "must be [relative clock, relative power]");
      double f = point[0], w = point[1];
      if (f <= 0 || f > 1 || w <= 0 || w > 1)
        fail(file, join(cat, i), "relative clock and power must be in (0, 1]");
      if (!p.frequencyPower.empty() &&
          (f <= p.frequencyPower.back().first || w < p.frequencyPower.back().second))
        fail(file, join(cat, i), "points must rise in clock and not fall in power");
      p.frequencyPower.push_back({f, w});
    }
    if (p.frequencyPower.back() != std::make_pair(1.0, 1.0))
      fail(file, cat, "must end at [1.0, 1.0] (full clock, full power)");
  }
  return p;
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
    for (auto it = peak.begin(); it != peak.end(); ++it) {
      if (!knownFormat(it.key()))
        fail(path, join(at, "peak_tflops"),
             "unknown number format '" + it.key() + "' (fp32, tf32, bf16, fp16, fp8)");
      s.peakTflops[it.key()] =
          positive(peak, it.key(), path, join(at, "peak_tflops"), s.measured);
    }
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
    s.date = stringOr(d, "date", "", path, at);
    if (!s.date.empty())
      checkDate(s.date, path, join(at, "date"));
    s.kernelOverheadSeconds =
        numberOr(d, "kernel_overhead_us", s.vendor == "cpu" ? 0.0 : 5.0, path, at) * 1e-6;
    if (s.kernelOverheadSeconds < 0)
      fail(path, join(at, "kernel_overhead_us"), "must be >= 0 microseconds");
    if (d.contains("price_per_hour"))
      s.price = parsePrice(d["price_per_hour"], path, join(at, "price_per_hour"));
    if (d.contains("power"))
      s.power = parsePower(d["power"], path, join(at, "power"));
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
