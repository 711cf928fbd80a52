//===- InstallLayoutTest.cpp - tools find their files relative to themselves --===//
#include "het/Support/InstallLayout.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

// The test binary runs from the build tree's bin/, which has the installed
// layout: lib/ and share/het/ beside it.
TEST(InstallLayout, FindsTheBuildTreeLikeAnInstalledOne) {
  std::string exeDir = het::executableDirectory();
  ASSERT_FALSE(exeDir.empty());
  ::unsetenv("HET_TEST_OVERRIDE");
  het::InstalledPath catalog{"HET_TEST_OVERRIDE",
                             std::string(het::dataDirectoryBelowPrefix()) + "/devices",
                             "nvidia.json", "the device catalog"};
  std::vector<std::string> tried;
  std::string found = het::locate(catalog, &tried);
  EXPECT_EQ(fs::path(found), (fs::path(exeDir).parent_path() / "share/het/devices"));
  ASSERT_EQ(tried.size(), 1u);
}

TEST(InstallLayout, EnvironmentOverridesAndIsNeverIgnored) {
  fs::path dir = fs::temp_directory_path() / "het-install-layout-test";
  fs::create_directories(dir);
  std::ofstream(dir / "libhetrt.so") << "";
  het::InstalledPath runtime{"HET_TEST_OVERRIDE", het::libraryDirectoryBelowPrefix(),
                             "libhetrt.so", "the runtime library"};
  ::setenv("HET_TEST_OVERRIDE", dir.c_str(), 1);
  EXPECT_EQ(het::locate(runtime), dir.string());
  // A wrong override is an error, not a fallback to the default place.
  ::setenv("HET_TEST_OVERRIDE", "/nonexistent/het", 1);
  std::vector<std::string> tried;
  EXPECT_EQ(het::locate(runtime, &tried), "");
  std::string message = het::whyNotFound(runtime, tried);
  EXPECT_EQ(message, "the runtime library not found (a folder holding libhetrt.so); looked in "
                     "$HET_TEST_OVERRIDE=/nonexistent/het; set $HET_TEST_OVERRIDE to its location");
  ::unsetenv("HET_TEST_OVERRIDE");
  fs::remove_all(dir);
}

TEST(InstallLayout, MissingFileIsReportedWithThePlaceLookedIn) {
  het::InstalledPath missing{"HET_TEST_OVERRIDE", "share/het/no-such-folder", "",
                             "the test data"};
  std::vector<std::string> tried;
  EXPECT_EQ(het::locate(missing, &tried), "");
  ASSERT_EQ(tried.size(), 1u);
  EXPECT_NE(tried[0].find("share/het/no-such-folder"), std::string::npos);
  EXPECT_NE(het::whyNotFound(missing, tried).find("the test data not found; looked in /"),
            std::string::npos);
}

} // namespace
