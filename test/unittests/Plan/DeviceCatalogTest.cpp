//===- DeviceCatalogTest.cpp - catalog entries, their prices and power ----===//
#include "TestCatalog.h"

#include "het/Plan/Error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace het::plan;
using nlohmann::json;

namespace {

json entry() {
  return {{"name", "X1"},
          {"vendor", "nvidia"},
          {"arch", "sm_90"},
          {"peak_tflops", {{"bf16", 100.0}}},
          {"memory_gib", 80},
          {"memory_bandwidth_gbs", 2000},
          {"intra_node_link", {{"type", "nvlink"}, {"bandwidth_gbs", 450}}},
          {"source", "test"}};
}

/// Loads one entry written to a file; the error text, or "" when it loads.
std::string load(const json &device, DeviceCatalog *out = nullptr) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("het-catalog-" + std::to_string(getpid()) + ".json"))
                         .string();
  std::ofstream(path) << json{{"devices", {device}}}.dump();
  std::string error;
  try {
    DeviceCatalog c;
    c.loadFile(path);
    if (out)
      *out = c;
  } catch (const PlanError &e) {
    error = e.what();
    error = error.substr(error.find(": ") + 2); // without the temp path
  }
  std::filesystem::remove(path);
  return error;
}

TEST(DeviceCatalog, PricePowerDateAndKernelOverhead) {
  json d = entry();
  d["date"] = "2025-03-18";
  d["kernel_overhead_us"] = 7.5;
  d["price_per_hour"] = {
      {"on_demand", 2.5}, {"spot", 1.0}, {"source", "a cloud"}, {"date", "2026-11-30"}};
  d["power"] = {{"tdp_w", 700},
                {"idle_w", 80},
                {"frequency_power", {{0.5, 0.35}, {0.8, 0.7}, {1.0, 1.0}}},
                {"source", "datasheet"}};
  DeviceCatalog c;
  ASSERT_EQ(load(d, &c), "");
  const DeviceSpec *s = c.find("x1");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->date, "2025-03-18");
  EXPECT_DOUBLE_EQ(s->kernelOverheadSeconds, 7.5e-6);
  EXPECT_TRUE(s->hasPrice());
  EXPECT_DOUBLE_EQ(s->price.onDemand, 2.5);
  EXPECT_DOUBLE_EQ(s->price.spot, 1.0);
  EXPECT_EQ(s->price.date, "2026-11-30");
  EXPECT_TRUE(s->hasPower());
  EXPECT_DOUBLE_EQ(s->power.tdpWatts, 700);
  EXPECT_DOUBLE_EQ(s->power.idleWatts, 80);
  ASSERT_EQ(s->power.frequencyPower.size(), 3u);
  EXPECT_DOUBLE_EQ(s->power.frequencyPower[1].second, 0.7);

  // Defaults: accelerators pay 5 us per kernel, CPUs nothing; no price or
  // power unless given.
  DeviceCatalog plain;
  ASSERT_EQ(load(entry(), &plain), "");
  EXPECT_DOUBLE_EQ(plain.find("X1")->kernelOverheadSeconds, 5e-6);
  EXPECT_FALSE(plain.find("X1")->hasPrice());
  EXPECT_FALSE(plain.find("X1")->hasPower());
  json cpu = entry();
  cpu["vendor"] = "cpu";
  ASSERT_EQ(load(cpu, &plain), "");
  EXPECT_EQ(plain.find("X1")->kernelOverheadSeconds, 0);
}

TEST(DeviceCatalog, BadFieldsAreNamed) {
  auto with = [](const char *key, json value) {
    json d = entry();
    d[key] = value;
    return load(d);
  };
  EXPECT_EQ(with("date", "3 March 2025"),
            "devices[X1].date: '3 March 2025' is not a date YYYY-MM-DD");
  EXPECT_EQ(with("kernel_overhead_us", -1), "devices[X1].kernel_overhead_us: must be >= 0 microseconds");
  EXPECT_EQ(with("price_per_hour", 2.5),
            "devices[X1].price_per_hour: must be an object {on_demand, spot, source, date} "
            "(USD per device-hour)");
  json price = {{"on_demand", 2.0}, {"spot", 3.0}, {"source", "s"}, {"date", "2026-01-01"}};
  EXPECT_NE(with("price_per_hour", price).find("devices[X1].price_per_hour.spot: spot price 3"),
            std::string::npos);
  price["spot"] = 1.0;
  price.erase("date");
  EXPECT_EQ(with("price_per_hour", price), "devices[X1].price_per_hour.date: missing");
  price["date"] = "2026-13-01";
  EXPECT_EQ(with("price_per_hour", price),
            "devices[X1].price_per_hour.date: '2026-13-01' is not a date YYYY-MM-DD");
  price["date"] = "2026-01-01";
  price["on_demand"] = 0;
  EXPECT_EQ(with("price_per_hour", price),
            "devices[X1].price_per_hour.on_demand: must be > 0, not 0");

  json power = {{"tdp_w", 300}, {"idle_w", 300}, {"source", "s"}};
  EXPECT_EQ(with("power", power), "devices[X1].power.idle_w: idle power must be below the TDP");
  power["idle_w"] = 50;
  power["frequency_power"] = {{0.5, 0.4}, {0.4, 0.6}, {1.0, 1.0}};
  EXPECT_EQ(with("power", power), "devices[X1].power.frequency_power[1]: points must rise in "
                                  "clock and not fall in power");
  power["frequency_power"] = {{0.5, 0.4}, {0.9, 0.8}};
  EXPECT_EQ(with("power", power), "devices[X1].power.frequency_power: must end at [1.0, 1.0] "
                                  "(full clock, full power)");
  power["frequency_power"] = {{1.5, 1.0}};
  EXPECT_EQ(with("power", power), "devices[X1].power.frequency_power[0]: relative clock and "
                                  "power must be in (0, 1]");
  power["frequency_power"] = {0.5};
  EXPECT_EQ(with("power", power),
            "devices[X1].power.frequency_power[0]: must be [relative clock, relative power]");
  power.erase("frequency_power");
  power.erase("tdp_w");
  EXPECT_EQ(with("power", power), "devices[X1].power.tdp_w: missing");
}

TEST(DeviceCatalog, ShipsTheChipsPeopleMix) {
  // The kinds users bring (issue 17's list), each dated and sourced; every
  // price and power figure says where it comes from.
  for (const char *name :
       {"Titan-RTX", "RTX-2080-Ti", "RTX-4090", "L4", "L40S", "A10", "A800", "H800", "H20",
        "GH200", "MI210", "MI325X", "Ascend-910A", "Ascend-910C", "Kunlunxin-P800",
        "MLU370-X8", "MLU590", "Hygon-K100", "RTX2080Ti", "910C", "K100"}) {
    const DeviceSpec *s = testCatalog().find(name);
    ASSERT_TRUE(s) << name;
    EXPECT_FALSE(s->date.empty()) << name;
    EXPECT_FALSE(s->source.empty()) << name;
  }
  int priced = 0, powered = 0;
  for (const std::string &name : testCatalog().names()) {
    const DeviceSpec *s = testCatalog().find(name);
    if (s->vendor == "cpu")
      continue;
    EXPECT_FALSE(s->date.empty()) << name << " has no date";
    if (s->hasPrice()) {
      ++priced;
      EXPECT_FALSE(s->price.source.empty()) << name;
      EXPECT_FALSE(s->price.date.empty()) << name;
    }
    if (s->hasPower()) {
      ++powered;
      EXPECT_FALSE(s->power.source.empty()) << name;
    }
  }
  EXPECT_GE(priced, 10);
  EXPECT_GE(powered, 25);
}

} // namespace
