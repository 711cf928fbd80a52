//===- TestCatalog.h - the shipped device catalog for unit tests ----------===//
#ifndef HET_TEST_UNITTESTS_PLAN_TESTCATALOG_H
#define HET_TEST_UNITTESTS_PLAN_TESTCATALOG_H

#include "het/Plan/DeviceCatalog.h"

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

#endif
