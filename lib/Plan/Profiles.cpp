//===- Profiles.cpp - import Sailor, Metis and het per-layer profiles -----===//
#include "het/Plan/Profiles.h"
#include "JsonUtil.h"
#include "het/Plan/DeviceCatalog.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

namespace het::plan {
using namespace json_util;
namespace fs = std::filesystem;

static long parseCount(const std::string &key, const std::string &file,
                       const std::string &at) {
  char *end = nullptr;
  long v = std::strtol(key.c_str(), &end, 10);
  if (key.empty() || *end != '\0' || v < 1)
    fail(file, at, "key '" + key + "' must be a positive integer");
  return v;
}

/// Lower-case letters and digits only: "RTX 2080 Ti", "rtx-2080-ti" and
/// "RTX2080Ti" are one GPU.
static std::string squeeze(const std::string &name) {
  std::string out;
  for (unsigned char c : name)
    if (std::isalnum(c))
      out += char(std::tolower(c));
  return out;
}

bool ProfileSet::resolveDevice(const std::string &name, const DeviceCatalog &catalog,
                               const std::string &file, std::string &device) {
  const DeviceSpec *spec = catalog.find(name);
  if (usedKinds.empty()) {
    if (!spec)
      fail(file, "device",
           "'" + name + "' is not in the device catalog (add it, or an alias)");
    device = spec->name;
    return true;
  }
  if (spec && usedKinds.count(spec->name)) {
    device = spec->name;
    return true;
  }
  if (spec) {
    skippedFiles.push_back("skipped " + file + ": " + spec->name +
                           " profiles, and the cluster has no " + spec->name);
    return false;
  }
  // Not in the catalog: the same name spelled another way?
  std::string kinds;
  for (const std::string &kind : usedKinds) {
    const DeviceSpec *used = catalog.find(kind);
    std::vector<std::string> names = {kind};
    if (used)
      names.insert(names.end(), used->aliases.begin(), used->aliases.end());
    for (const std::string &n : names)
      if (squeeze(n) == squeeze(name)) {
        device = kind;
        return true;
      }
    kinds += (kinds.empty() ? "" : ", ") + kind;
  }
  // A profile the user gave that prices nothing would leave its kind on
  // the roofline with only a note: a misspelt card is an error instead.
  fail(file, "device",
       "'" + name + "' is not in the device catalog and is none of the cluster's kinds (" +
           kinds + "); if it is one of them, add the name as an alias in the catalog");
}

void ProfileSet::add(const std::string &device, int tp, int mbs,
                     ProfileTable table, const std::string &file) {
  table.device = device;
  table.file = file;
  auto key = std::make_tuple(device, tp, mbs);
  auto it = tables.find(key);
  if (it != tables.end())
    fail(file, "",
         "duplicates the profile of " + device + " (tp " + std::to_string(tp) +
             ", micro-batch " + std::to_string(mbs) + ") in " +
             it->second.file);
  tables.emplace(key, std::move(table));
}

void ProfileSet::loadDirectory(const std::string &dir, const DeviceCatalog &catalog,
                               const std::vector<std::string> &onlyKinds) {
  usedKinds = std::set<std::string>(onlyKinds.begin(), onlyKinds.end());
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail(dir, "", "profile directory not found");
  std::vector<std::string> files;
  for (const auto &e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty())
    fail(dir, "", "no *.json profiles");
  for (const auto &f : files)
    loadFile(f, catalog);
}

void ProfileSet::loadFile(const std::string &path,
                          const DeviceCatalog &catalog) {
  fs::path p(path);
  std::string base = p.filename().string();
  if (base.rfind("DeviceType.", 0) == 0)
    return loadMetis(path, catalog);
  if (base == "profile.json")
    return loadSailor(path, p.parent_path().filename().string(), catalog);
  json doc = readFile(path);
  if (doc.is_object() && doc.contains("format") &&
      doc["format"] == "het-profile")
    return loadHet(path, catalog);
  fail(path, "",
       "not a profile: expected Sailor's <gpu>/profile.json, "
       "Metis' DeviceType.<gpu>_tp<T>_bs<B>.json or "
       "{\"format\": \"het-profile\"}");
}

// Sailor: {"<mbs>": {"<tp>": {"<layer>": [fwd_s, bwd_s, update_s]}}}.
void ProfileSet::loadSailor(const std::string &path, const std::string &gpu,
                            const DeviceCatalog &catalog) {
  std::string device;
  if (!resolveDevice(gpu, catalog, path, device))
    return;
  json doc = readFile(path);
  if (!doc.is_object() || doc.empty())
    fail(path, "(top level)",
         "must map micro-batch sizes to tensor-parallel degrees");
  for (auto m = doc.begin(); m != doc.end(); ++m) {
    int mbs = int(parseCount(m.key(), path, "\"" + m.key() + "\""));
    if (!m->is_object())
      fail(path, "\"" + m.key() + "\"", "must be an object of tp degrees");
    for (auto t = m->begin(); t != m->end(); ++t) {
      std::string at = "\"" + m.key() + "\".\"" + t.key() + "\"";
      int tp = int(parseCount(t.key(), path, at));
      if (!t->is_object() || t->empty())
        fail(path, at, "must map layer indices to [fwd, bwd, update]");
      ProfileTable table;
      table.layers.resize(t->size());
      std::vector<bool> seen(t->size(), false);
      for (auto l = t->begin(); l != t->end(); ++l) {
        std::string lat = at + ".\"" + l.key() + "\"";
        char *end = nullptr;
        long idx = std::strtol(l.key().c_str(), &end, 10);
        if (l.key().empty() || *end || idx < 0 || idx >= long(t->size()))
          fail(path, lat,
               "layer index must be in [0, " + std::to_string(t->size()) + ")");
        if (!l->is_array() || l->size() != 3)
          fail(path, lat, "must be [fwd_seconds, bwd_seconds, update_seconds]");
        double v[3];
        for (int k = 0; k < 3; ++k) {
          if (!(*l)[k].is_number() || (*l)[k].get<double>() < 0 ||
              !std::isfinite((*l)[k].get<double>()))
            fail(path, lat + "[" + std::to_string(k) + "]",
                 "must be a time in seconds >= 0, not " + (*l)[k].dump());
          v[k] = (*l)[k].get<double>();
        }
        seen[idx] = true;
        table.layers[idx] = LayerTime{v[0], v[1], v[2]};
      }
      add(device, tp, mbs, std::move(table), path);
    }
  }
}

// Metis: DeviceType.<GPU>_tp<T>_bs<B>.json; per-layer forward + backward
// time in execution_time.layer_compute_total_ms.
void ProfileSet::loadMetis(const std::string &path,
                           const DeviceCatalog &catalog) {
  static const std::regex name(R"(DeviceType\.(\w+?)_tp(\d+)_bs(\d+)\.json)");
  std::smatch m;
  std::string base = fs::path(path).filename().string();
  if (!std::regex_match(base, m, name))
    fail(path, "(file name)",
         "a Metis profile is named DeviceType.<GPU>_tp<T>_bs<B>.json");
  std::string device;
  if (!resolveDevice(m[1], catalog, path, device))
    return;
  int tp = int(parseCount(m[2], path, "(file name) tp"));
  int mbs = int(parseCount(m[3], path, "(file name) bs"));
  json doc = readFile(path);
  const json &time = field(doc, "execution_time", path, "");
  const json &layers =
      array(time, "layer_compute_total_ms", path, "execution_time");
  double optimizerMs = positive(time, "optimizer_time_ms", path,
                                "execution_time", /*allowZero=*/true);
  const json &model = field(doc, "model", path, "");
  long n = integer(model, "num_layers", path, "model", 1);
  if (long(layers.size()) != n)
    fail(path, "execution_time.layer_compute_total_ms",
         "has " + std::to_string(layers.size()) +
             " entries but model.num_layers is " + std::to_string(n));
  std::vector<double> weight(layers.size(), 1.0);
  if (model.contains("parameters") &&
      model["parameters"].contains("parameters_per_layer_bytes")) {
    const json &pb = model["parameters"]["parameters_per_layer_bytes"];
    if (!pb.is_array() || pb.size() != layers.size())
      fail(path, "model.parameters.parameters_per_layer_bytes",
           "must list one size per layer");
    for (size_t i = 0; i < pb.size(); ++i)
      weight[i] = pb[i].is_number() ? pb[i].get<double>() : 1.0;
  }
  double totalWeight = 0;
  for (double w : weight)
    totalWeight += w;
  ProfileTable table;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!layers[i].is_number() || layers[i].get<double>() < 0)
      fail(path,
           "execution_time.layer_compute_total_ms[" + std::to_string(i) + "]",
           "must be a time in ms >= 0, not " + layers[i].dump());
    double total = layers[i].get<double>() * 1e-3;
    // Metis records forward + backward together; a backward pass costs
    // about twice the forward (two matrix products per forward one).
    LayerTime t{total / 3, 2 * total / 3,
                totalWeight > 0 ? optimizerMs * 1e-3 * weight[i] / totalWeight
                                : 0};
    table.layers.push_back(t);
  }
  add(device, tp, mbs, std::move(table), path);
}

void ProfileSet::loadHet(const std::string &path,
                         const DeviceCatalog &catalog) {
  json doc = readFile(path);
  std::string device;
  if (!resolveDevice(string(doc, "device", path, ""), catalog, path, device))
    return;
  int mbs = int(integer(doc, "micro_batch", path, "", 1));
  int tp = doc.contains("tensor_parallel")
               ? int(integer(doc, "tensor_parallel", path, "", 1))
               : 1;
  const json &layers = array(doc, "layers", path, "");
  ProfileTable table;
  for (size_t i = 0; i < layers.size(); ++i) {
    std::string at = join("layers", i);
    LayerTime t;
    t.fwd = positive(layers[i], "fwd_ms", path, at, true) * 1e-3;
    t.bwd = positive(layers[i], "bwd_ms", path, at, true) * 1e-3;
    t.update = numberOr(layers[i], "update_ms", 0, path, at) * 1e-3;
    table.layers.push_back(t);
  }
  add(device, tp, mbs, std::move(table), path);
}

bool ProfileSet::lookup(const std::string &device, int tp, double mbs,
                        std::vector<LayerTime> &out) const {
  LayerTime call;
  return lookup(device, tp, mbs, out, call);
}

bool ProfileSet::lookup(const std::string &device, int tp, double mbs,
                        std::vector<LayerTime> &out, LayerTime &call) const {
  // The profiled sizes of this device and degree, smallest first.
  std::vector<std::pair<int, const ProfileTable *>> sizes;
  for (const auto &[key, table] : tables)
    if (std::get<0>(key) == device && std::get<1>(key) == tp)
      sizes.push_back({std::get<2>(key), &table});
  if (sizes.empty())
    return false;
  std::sort(sizes.begin(), sizes.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  // The stage call's cost: linear between two sizes, the nearest's outside.
  {
    auto above = std::find_if(sizes.begin(), sizes.end(),
                              [&](const auto &s) { return s.first >= mbs; });
    if (above == sizes.end()) {
      call = sizes.back().second->call;
    } else if (above == sizes.begin() || above->first == mbs) {
      call = above->second->call;
    } else {
      const LayerTime &lo = std::prev(above)->second->call, &hi = above->second->call;
      double w = (mbs - std::prev(above)->first) / double(above->first - std::prev(above)->first);
      call = {lo.fwd + w * (hi.fwd - lo.fwd), lo.bwd + w * (hi.bwd - lo.bwd),
              lo.update + w * (hi.update - lo.update)};
    }
  }
  // Between two profiled sizes: linear in mbs through both (a fixed cost
  // per call plus one per sample, as kernels behave). Below the smallest:
  // the smallest, scaled in proportion.
  auto above = std::find_if(sizes.begin(), sizes.end(),
                            [&](const auto &s) { return s.first >= mbs; });
  if (above != sizes.end() && above != sizes.begin() && above->first != mbs &&
      above->second->layers.size() == std::prev(above)->second->layers.size()) {
    auto below = std::prev(above);
    double w = (mbs - below->first) / double(above->first - below->first);
    out = below->second->layers;
    for (size_t i = 0; i < out.size(); ++i) {
      const LayerTime &hi = above->second->layers[i];
      out[i].fwd += w * (hi.fwd - out[i].fwd);
      out[i].bwd += w * (hi.bwd - out[i].bwd);
      out[i].update += w * (hi.update - out[i].update);
    }
    return true;
  }
  // Beyond the largest: on the line through the two largest (the per-call
  // cost stays, only the per-sample part grows: oneDNN's MLP layers at 64
  // samples ran in 0.90x what doubling their time at 32 says); a
  // component that shrank between them (noise) is scaled in proportion.
  if (above == sizes.end() && sizes.size() >= 2 &&
      sizes.back().second->layers.size() == sizes[sizes.size() - 2].second->layers.size()) {
    const auto &hi = sizes.back(), &lo = sizes[sizes.size() - 2];
    double span = hi.first - lo.first, beyond = mbs - hi.first;
    out = hi.second->layers;
    auto extend = [&](double top, double low) {
      return top >= low ? top + beyond * (top - low) / span : top * mbs / hi.first;
    };
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].fwd = extend(hi.second->layers[i].fwd, lo.second->layers[i].fwd);
      out[i].bwd = extend(hi.second->layers[i].bwd, lo.second->layers[i].bwd);
    }
    return true;
  }
  const auto &nearest = above == sizes.end() ? sizes.back() : *above;
  double scale = mbs / nearest.first;
  out = nearest.second->layers;
  for (auto &t : out) {
    t.fwd *= scale;
    t.bwd *= scale;
  }
  return true;
}

void ProfileSet::checkLayerCount(size_t layers) const {
  for (const auto &[key, table] : tables)
    if (table.layers.size() != layers)
      fail(table.file, "layers",
           "profile has " + std::to_string(table.layers.size()) +
               " layers but the model has " + std::to_string(layers));
}

std::vector<std::string> ProfileSet::describe() const {
  std::vector<std::string> out;
  for (const auto &[key, table] : tables)
    out.push_back(std::get<0>(key) + " tp" + std::to_string(std::get<1>(key)) +
                  " mbs" + std::to_string(std::get<2>(key)) + " (" +
                  table.file + ")");
  return out;
}

} // namespace het::plan
