//===- Attempts.h - run a job attempt after attempt -------------*- C++ -*-===//
//
// het-run's policy over attempts of one job: run the ranks (here, or on
// --join agents through a Coordinator), and after each attempt decide:
// done; restart the same plan (--max-restarts; spares; lost devices back
// within --loss-grace-s); or, under --elastic, plan again for the devices
// left (ElasticPlans) and resume from the newest checkpoint -- also when
// devices come back and the ranks stopped after a checkpoint for them.
// Every decision is one "het-run: ..." line of the job log.
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_ATTEMPTS_H
#define HET_RUN_ATTEMPTS_H

#include "Admissions.h"
#include "Coordinator.h"
#include "Elastic.h"
#include "Metrics.h"
#include "Supervisor.h"

#include "het/Plan/ClusterSpec.h"
#include "het/Plan/DeviceCatalog.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hetrun {

struct Attempts {
  JobOptions opts;               // the first attempt's ranks, program and environment
  int maxRestarts = 0, spares = 0;
  double lossGraceS = 0, joinTimeoutS = 300;
  het::plan::DeviceCatalog *catalog = nullptr;
  std::unique_ptr<het::plan::Cluster> cluster; // null without --cluster
  JobMetrics *metrics = nullptr;               // set under --elastic
  ElasticPlans *plans = nullptr;               // set under --elastic
  LostDevices *lostDevices = nullptr;
  Coordinator *coordinator = nullptr;          // set under --coordinate
  /// --tuning-db: where a finished pipeline's measured iteration time is
  /// recorded under its plan key (het/Plan/MeasuredPlans.h).
  std::string tuningDb;
};

/// Each rank's HET_DEVICE_GROUP and HET_DEVICE_KIND when het-run --cluster
/// starts one rank per device, group by group.
std::vector<std::vector<std::pair<std::string, std::string>>>
deviceEnvironment(const het::plan::Cluster &cluster);

/// Runs attempts until the job ends; returns het-run's exit status (0 done,
/// 1 failed, 128+N interrupted by signal N).
int runAttempts(Attempts &attempts);

} // namespace hetrun

#endif
