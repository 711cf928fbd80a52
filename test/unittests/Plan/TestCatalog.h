//===- TestCatalog.h - the shipped device catalog for unit tests ----------===//
#ifndef HET_TEST_UNITTESTS_PLAN_TESTCATALOG_H
#define HET_TEST_UNITTESTS_PLAN_TESTCATALOG_H

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/DeviceCatalog.h"

#include <nlohmann/json.hpp>
#include <string>

inline const het::plan::DeviceCatalog &testCatalog() {
  static het::plan::DeviceCatalog catalog =
      het::plan::DeviceCatalog::loadDirectory(std::string(HET_SOURCE_DIR) +
                                              "/data/devices");
  return catalog;
}

inline std::string sourcePath(const std::string &relative) {
  return std::string(HET_SOURCE_DIR) + "/" + relative;
}

/// A device of round numbers for hand-computed costs: 100 TFLOP/s fp32 at
/// 0.5 efficiency (5e13 FLOP/s), 1000 GB/s at 0.7 (7e11 B/s).
inline het::plan::DeviceSpec roundDevice(double memoryGib) {
  het::plan::DeviceSpec d;
  d.name = "round";
  d.vendor = "cpu";
  d.arch = "x";
  d.peakTflops["fp32"] = 100;
  d.memoryGib = memoryGib;
  d.memoryBandwidthGBs = 1000;
  d.intraNodeLinkType = "x";
  d.intraNodeLinkGBs = 100;
  d.computeEfficiency = 0.5;
  d.memoryEfficiency = 0.7;
  d.source = "test";
  return d;
}

/// One node of `devices` "round" devices in group "g", linked at 800
/// Gbit/s (1e11 B/s) with 1 us latency.
inline het::plan::Cluster oneRoundNode(const het::plan::DeviceCatalog &catalog, int devices) {
  nlohmann::json spec = {
      {"name", "c"},
      {"nodes",
       {{{"name", "n"},
         {"count", 1},
         {"devices", {{{"group", "g"}, {"kind", "round"}, {"count", devices}}}},
         {"links",
          {{{"between", {"g", "g"}},
            {"type", "x"},
            {"bandwidth_gbps", 800.0},
            {"latency_us", 1.0}}}}}}}};
  return het::plan::parseCluster(spec, "c.json", catalog);
}

#endif
