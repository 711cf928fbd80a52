//===- Stages.h - het-tune stages -------------------------------------*- C++ -*-===//
//
// The `stages` command: each layer of a model timed on each local device
// kind of a cluster at several micro-batch sizes, and messages between the
// cluster's ranks on this host; filed as stage and message records for het-plan --tuning-db and
// het-compile --plan auto --tuning-db (het/Tune/StageProfiles.h).
//
//===----------------------------------------------------------------------===//

#ifndef HET_TOOLS_HET_TUNE_STAGES_H
#define HET_TOOLS_HET_TUNE_STAGES_H

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

struct StagesCommand {
  CLI::App *command = nullptr;
  std::string model, cluster, db;
  std::string load; // --load for the profile runs (an imported model's constants)
  std::vector<int> microBatches; // empty: the model's batch, halved down to 1
  int concurrent = 1;            // profile processes at once
  int repeats = 20;
  int rounds = 3; // each kind and size timed in turn, the median kept
};

void addStagesCommand(CLI::App &app, StagesCommand &stages);
int runStages(const StagesCommand &stages, int waitMs);

#endif
