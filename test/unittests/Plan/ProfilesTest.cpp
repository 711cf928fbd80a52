//===- ProfilesTest.cpp - Sailor, Metis and het profiles ------------------===//
#include "TestCatalog.h"

#include "het/Plan/CostModel.h"
#include "het/Plan/Error.h"
#include "het/Plan/Profiles.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace het::plan;

namespace {

std::string errorLoading(const std::string &dir) {
  try {
    ProfileSet p;
    p.loadDirectory(dir, testCatalog());
  } catch (const PlanError &e) {
    return e.what();
  }
  return "";
}

TEST(Profiles, SailorFilesLoadWithTheirNumbers) {
  ProfileSet p;
  p.loadDirectory(sourcePath("data/profiles/sailor/OPT-350"), testCatalog());
  std::vector<LayerTime> t;
  ASSERT_TRUE(p.lookup("A100-40", 1, 1, t));
  ASSERT_EQ(t.size(), 26u);
  // OPT-350/A100-40/profile.json: "1" -> "1" -> "1": [0.002786, 0.005906,
  // 0.002938].
  EXPECT_DOUBLE_EQ(t[1].fwd, 0.002786);
  EXPECT_DOUBLE_EQ(t[1].bwd, 0.005906);
  EXPECT_DOUBLE_EQ(t[1].update, 0.002938);
  // Micro-batch 3 is not profiled: linear between the profiled 2 and 4.
  std::vector<LayerTime> two, four, three, sixteen, eight;
  ASSERT_TRUE(p.lookup("A100-40", 1, 2, two));
  ASSERT_TRUE(p.lookup("A100-40", 1, 4, four));
  ASSERT_TRUE(p.lookup("A100-40", 1, 3, three));
  EXPECT_DOUBLE_EQ(three[1].fwd, (two[1].fwd + four[1].fwd) / 2);
  EXPECT_DOUBLE_EQ(three[1].update, (two[1].update + four[1].update) / 2);
  // Beyond the largest (8): on the line through 4 and 8 (a per-call cost
  // and a per-sample one), update unscaled.
  ASSERT_TRUE(p.lookup("A100-40", 1, 8, eight));
  ASSERT_TRUE(p.lookup("A100-40", 1, 16, sixteen));
  ASSERT_GE(eight[1].fwd, four[1].fwd);
  EXPECT_DOUBLE_EQ(sixteen[1].fwd, eight[1].fwd + 8 * (eight[1].fwd - four[1].fwd) / 4);
  EXPECT_LT(sixteen[1].fwd, eight[1].fwd * 2);
  EXPECT_DOUBLE_EQ(sixteen[1].update, eight[1].update);
  // The directory name is resolved through the catalog.
  EXPECT_TRUE(p.lookup("RTX-3090", 8, 8, t));
  EXPECT_FALSE(p.lookup("A100-80", 1, 1, t));
}

TEST(Profiles, MetisFilesSplitForwardAndBackward) {
  ProfileSet p;
  p.loadDirectory(sourcePath("test/plan/Inputs/profiles/metis"), testCatalog());
  std::vector<LayerTime> t;
  ASSERT_TRUE(p.lookup("RTX-3090", 1, 2, t)); // DeviceType.RTX3090_tp1_bs2
  ASSERT_EQ(t.size(), 26u);
  EXPECT_NEAR(t[1].fwd + t[1].bwd, 32.636e-3,
              1e-9); // layer_compute_total_ms[1]
  EXPECT_NEAR(t[1].bwd, 2 * t[1].fwd, 1e-12);
}

TEST(Profiles, MeasuredTimesReplaceTheRoofline) {
  Cluster cluster = loadCluster(
      sourcePath("test/plan/Inputs/clusters/profiled.json"), testCatalog());
  ModelDesc model = loadModelJson(sourcePath("examples/models/opt-350.json"));
  ProfileSet p;
  p.loadDirectory(sourcePath("data/profiles/sailor/OPT-350"), testCatalog());
  CostModel cost(model, cluster, &p);
  const LayerTable &t = cost.table(0, 1, 1); // the A100-40 group
  EXPECT_TRUE(t.profiled);
  EXPECT_DOUBLE_EQ(t.range(t.compute, 1, 2), 0.002786 + 0.005906);
}

TEST(Profiles, BadProfilesNameFileAndField) {
  EXPECT_NE(errorLoading(sourcePath("test/plan/Inputs/profiles/bad-sailor"))
                .find("bad-sailor/A100-40/profile.json: \"1\".\"1\".\"5\"[1]: "
                      "must be a "
                      "time in seconds >= 0, not -0.5"),
            std::string::npos);
  EXPECT_NE(errorLoading(sourcePath("test/plan/Inputs/profiles/bad-metis"))
                .find("DeviceType.A100_tp1_bs1.json: "
                      "execution_time.layer_compute_total_ms: "
                      "has 26 entries but model.num_layers is 10"),
            std::string::npos);
  EXPECT_NE(errorLoading(sourcePath("test/plan/Inputs/profiles/missing"))
                .find("profile directory not found"),
            std::string::npos);
  // A directory of something else entirely.
  EXPECT_NE(errorLoading(sourcePath("test/plan/Inputs/clusters"))
                .find("not a profile"),
            std::string::npos);
}

TEST(Profiles, OnlyTheClustersKindsAreLoaded) {
  // Sailor's two GPUs, one spelled as people do ("rtx 3090"): a cluster of
  // RTX-3090s takes only theirs and skips the A100's, saying so.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("het-profiles-" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::string sailor = sourcePath("data/profiles/sailor/OPT-350/");
  for (auto [from, to] : {std::pair{"RTX-3090", "rtx 3090"}, {"A100-40", "A100-40"}}) {
    fs::create_directories(dir / to);
    fs::copy_file(sailor + from + "/profile.json", dir / to / "profile.json");
  }
  ProfileSet p;
  p.loadDirectory(dir.string(), testCatalog(), {"RTX-3090"});
  std::vector<LayerTime> t;
  EXPECT_TRUE(p.lookup("RTX-3090", 1, 1, t));
  EXPECT_FALSE(p.lookup("A100-40", 1, 1, t));
  ASSERT_EQ(p.skipped().size(), 1u);
  EXPECT_EQ(p.skipped()[0], "skipped " + (dir / "A100-40/profile.json").string() +
                                ": A100-40 profiles, and the cluster has no A100-40");
  // A GPU no catalog knows, and none of the cluster's kinds spelled another
  // way: an error naming the file and the kinds, not a note (the kind it
  // was meant for would fall back to the roofline unnoticed).
  fs::create_directories(dir / "Mystery-GPU");
  fs::copy_file(sailor + "A100-40/profile.json", dir / "Mystery-GPU" / "profile.json");
  try {
    ProfileSet q;
    q.loadDirectory(dir.string(), testCatalog(), {"RTX-3090"});
    ADD_FAILURE() << "an unknown GPU's profile was accepted";
  } catch (const PlanError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  (dir / "Mystery-GPU/profile.json").string()),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'Mystery-GPU' is not in the device catalog and is "
                                         "none of the cluster's kinds (RTX-3090); if it is one "
                                         "of them, add the name as an alias in the catalog"),
              std::string::npos)
        << e.what();
  }
  // Without a cluster to serve, an unknown GPU is an error too.
  EXPECT_NE(errorLoading(dir.string()).find("'Mystery-GPU' is not in the device catalog"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Profiles, LayerCountMustMatchTheModel) {
  ProfileSet p;
  p.loadDirectory(sourcePath("data/profiles/sailor/OPT-350"), testCatalog());
  EXPECT_THROW(p.checkLayerCount(4), PlanError);
  EXPECT_NO_THROW(p.checkLayerCount(26));
}

} // namespace
