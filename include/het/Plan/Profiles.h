//===- Profiles.h - measured per-layer times that beat formulas -*- C++ -*-===//
//
// Three formats are read:
//  * Sailor (eth-easl/sailor): <dir>/<gpu>/profile.json, or one profile.json,
//    {"<mbs>": {"<tp>": {"<layer>": [fwd_s, bwd_s, update_s]}}};
//  * Metis (SamsungLabs/Metis): DeviceType.<GPU>_tp<T>_bs<B>.json with
//    execution_time.layer_compute_total_ms (forward + backward per layer) and
//    optimizer_time_ms;
//  * het's own: {"format": "het-profile", "device": K, "micro_batch": B,
//    "tensor_parallel": T, "layers": [{"fwd_ms": .., "bwd_ms": ..}]}.
//
//===----------------------------------------------------------------------===//
#ifndef HET_PLAN_PROFILES_H
#define HET_PLAN_PROFILES_H

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace het::plan {

class DeviceCatalog;

/// Seconds for one layer on one device at one micro-batch size.
struct LayerTime {
  double fwd = 0, bwd = 0, update = 0;
};

struct ProfileTable {
  std::string device; // catalog name
  std::string file;   // where it came from
  std::vector<LayerTime> layers;
  /// What one call of a stage costs besides its layers' (het-tune stages:
  /// the runtime's work around a stage function -- arguments, buffers,
  /// received and sent values, samples), paid once per stage and
  /// micro-batch however many layers the stage holds; zero for profiles
  /// that do not measure it.
  LayerTime call;
};

class ProfileSet {
public:
  /// Loads every profile under `dir` (recursively). Device names are
  /// resolved through the catalog (names and aliases); a profile of a device
  /// the catalog does not know is an error naming the file. With
  /// `onlyKinds` (the catalog names a cluster uses), profiles of other
  /// catalog devices are skipped instead, each with a line in skipped(),
  /// and an unknown name matches a used kind spelled another way ("RTX
  /// 3090"); one that matches none is still an error, naming the kinds.
  void loadDirectory(const std::string &dir, const DeviceCatalog &catalog,
                     const std::vector<std::string> &onlyKinds = {});
  /// Why each skipped file was skipped (names the file).
  const std::vector<std::string> &skipped() const { return skippedFiles; }
  void loadFile(const std::string &path, const DeviceCatalog &catalog);

  /// Adds measured times (het-tune stages' records); `source` names where
  /// they came from. A second table of the same key is an error.
  void add(const std::string &device, int tp, int mbs, ProfileTable table,
           const std::string &source);

  /// Per-layer times for `device` at micro-batch `mbs` and tensor-parallel
  /// degree `tp`: the exact entry if profiled; between two profiled sizes
  /// of the same `tp`, linear through both; else the nearest, scaled in
  /// proportion to `mbs` (update time unscaled). False when the device has
  /// no profile at this `tp`.
  bool lookup(const std::string &device, int tp, double mbs,
              std::vector<LayerTime> &out) const;
  /// The same, and in `call` the stage call's cost at `mbs` (between two
  /// profiled sizes linear through both, outside them the nearest's).
  bool lookup(const std::string &device, int tp, double mbs, std::vector<LayerTime> &out,
              LayerTime &call) const;
  /// Checks that every table has `layers` layers (errors name the file).
  void checkLayerCount(size_t layers) const;
  bool empty() const { return tables.empty(); }
  size_t size() const { return tables.size(); }
  std::vector<std::string> describe() const;

private:
  // (device, tp, mbs) -> table
  std::map<std::tuple<std::string, int, int>, ProfileTable> tables;
  std::set<std::string> usedKinds; // empty: every device is wanted
  std::vector<std::string> skippedFiles;
  /// The catalog name of the profiled `name` into `device`; false when the
  /// profile is to be skipped (recorded in skippedFiles).
  bool resolveDevice(const std::string &name, const DeviceCatalog &catalog,
                     const std::string &file, std::string &device);
  void loadSailor(const std::string &path, const std::string &device,
                  const DeviceCatalog &catalog);
  void loadMetis(const std::string &path, const DeviceCatalog &catalog);
  void loadHet(const std::string &path, const DeviceCatalog &catalog);
};

} // namespace het::plan

#endif
