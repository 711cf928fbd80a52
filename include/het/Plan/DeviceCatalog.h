//===- DeviceCatalog.h - public specs of the chips a cluster uses -*- C++
//-*-===//
#ifndef HET_PLAN_DEVICECATALOG_H
#define HET_PLAN_DEVICECATALOG_H

#include <map>
#include <string>
#include <vector>

namespace het::plan {

/// One kind of device: what the cost model needs to turn FLOPs and bytes
/// into seconds. Bandwidths in GB/s (bytes), capacities in GiB.
struct DeviceSpec {
  std::string name, vendor, arch;
  /// The kernel library a local CPU kind compiles with (cpu.onednn "dnnl",
  /// cpu.mlir "mlir", cpu.reference "reference"); empty for kinds this
  /// machine does not run.
  std::string localLibrary() const {
    if (vendor != "cpu")
      return "";
    return arch == "mlir" ? "mlir" : arch == "reference" ? "reference" : "dnnl";
  }
  std::vector<std::string> aliases;
  std::map<std::string, double> peakTflops; // dtype -> dense TFLOP/s
  double memoryGib = 0, memoryBandwidthGBs = 0;
  std::string intraNodeLinkType;
  double intraNodeLinkGBs = 0;
  double computeEfficiency = 0.5, memoryEfficiency = 0.7;
  /// Fixed cost of one kernel (launch, synchronisation, a library call's
  /// setup) in seconds, paid per op whatever its size: what makes a tiny
  /// model slower than its FLOPs say. `kernel_overhead_us` in the entry;
  /// by default 5 us on accelerators (a CUDA/HIP launch plus the gap
  /// before the next kernel) and 0 on CPUs.
  double kernelOverheadSeconds = 0;
  bool measured = false;
  std::string source, file;
  /// When the entry's figures were published or read (`date`).
  std::string date;

  /// What an hour of one device costs (`price_per_hour`, USD); zero where
  /// the catalog has no price. `spot` 0: no spot market known.
  struct Price {
    double onDemand = 0, spot = 0;
    std::string source, date;
  };
  Price price;
  bool hasPrice() const { return price.onDemand > 0; }

  /// Board power (`power`): TDP, idle, and where published a curve of
  /// relative power over relative clock, increasing, ending at (1, 1).
  struct Power {
    double tdpWatts = 0, idleWatts = 0;
    std::vector<std::pair<double, double>> frequencyPower;
    std::string source;
  };
  Power power;
  bool hasPower() const { return power.tdpWatts > 0; }

  /// Achievable FLOP/s in `format` (fp32, tf32, bf16, fp16, fp8); 0 when
  /// the kind has no such format (NumberFormats.h chooses one it has).
  double flops(const std::string &format) const;
  /// Whether the kind trains in `format`: its entry gives a peak for it.
  bool hasFormat(const std::string &format) const;
  /// The formats it has, widest first (fp32, tf32, bf16, fp16, fp8).
  std::vector<std::string> formats() const;
  /// Achievable bytes/s of device memory.
  double memoryBytesPerSecond() const;
};

class DeviceCatalog {
public:
  /// Loads every *.json file of `dir` (sorted by name).
  static DeviceCatalog loadDirectory(const std::string &dir);
  /// The catalog shipped with het: $HET_DEVICE_CATALOG or data/devices.
  static std::string defaultDirectory();

  /// Adds the devices of `path`; a name defined already is an error, or
  /// with `replace` the file's entry replaces it (calibrated local kinds).
  void loadFile(const std::string &path, bool replace = false);
  void add(DeviceSpec spec);
  /// By name or alias, case-insensitively; a `measured` entry is filled in by
  /// the local micro-benchmark the first time it is asked for.
  const DeviceSpec *find(const std::string &name) const;
  std::vector<std::string> names() const;

private:
  mutable std::vector<DeviceSpec> specs;
};

/// Measures this machine's CPU: fp32 FLOP/s of a blocked matrix product on
/// every core, memcpy bandwidth, physical memory.
DeviceSpec measureLocalCpu(const DeviceSpec &templateSpec);

} // namespace het::plan

#endif
