//===- StageProfiles.h - measured layer and communication times for the planner -*- C++ -*-===//
//
// het-tune stages times each layer of a model on each local device kind at
// several micro-batch sizes (a pipeline executable of one layer per stage,
// profiled by its own --profile-stages) and files one "stage" record per
// layer, kind and size. The planner (het-plan --tuning-db, het-compile
// --plan auto --tuning-db) turns them back into profiles that replace its
// roofline, and prices the communication inside this host by het-tune
// collectives' all-reduce records (the ring the pipeline runtime runs).
//
// A model is keyed by its name (less het-autodiff's _train_step suffix),
// its layer count and a digest of its per-layer parameter tensors: the
// same whether the planner reads the model file or het-compile the
// training step built from it.
//
//===----------------------------------------------------------------------===//

#ifndef HET_TUNE_STAGEPROFILES_H
#define HET_TUNE_STAGEPROFILES_H

#include "het/Plan/CostModel.h"
#include "het/Plan/ModelDesc.h"
#include "het/Plan/Profiles.h"
#include "het/Tune/TuningDatabase.h"

#include <ostream>
#include <string>
#include <vector>

namespace het::tune {

/// The model part of a stage record's workload: "model=<name> layers=<L>
/// params=<digest>".
std::string stageModelKey(const plan::ModelDesc &model);

/// How a layer was measured.
struct LayerMeasurement {
  int layer = 0;
  int microBatch = 0;    // samples per call
  int concurrent = 1;    // processes timing at once on this host
  plan::LayerTime time;  // seconds per call
  std::string details;   // JSON: how it was measured
};

/// The record of one layer's measurement of `model` on `device` (a device
/// kind such as cpu.onednn), measured with `compiler`.
Record stageRecord(const plan::ModelDesc &model, const std::string &device,
                   const std::string &compiler, const LayerMeasurement &m);

/// Adds to `profiles` every complete table (all layers, one micro-batch
/// size) of `model` on `device` recorded in `db` for this host and het
/// version; returns how many tables. `measuredAt` gets the newest
/// record's time.
size_t loadStageProfiles(const TuningDatabase &db, const plan::ModelDesc &model,
                         const std::string &device, plan::ProfileSet &profiles,
                         std::string &measuredAt);

/// All-reduce and message times from `db`'s records of this host: het-tune
/// stages' messages with `hostRanks` ranks (the job's ranks on this host;
/// else the most ranks measured), or else het-tune collectives' ring
/// all-reduces (a message as one step of that ring). `source` says which,
/// and is empty when neither exists (the functions then return -1).
plan::MeasuredCommunication measuredCommunication(const TuningDatabase &db, int hostRanks);

/// What a planner takes from the tuning database at `path` for `model` on
/// `cluster`: each device kind's stage profiles (into `profiles`) and the
/// measured communication (into `communication`, used when some rank count
/// was measured). Returns report lines saying what was found and what was
/// not (with the het-tune command that measures it). Throws DatabaseError.
std::vector<std::string> readPlannerRecords(const std::string &path,
                                            const plan::ModelDesc &model,
                                            const plan::Cluster &cluster,
                                            plan::ProfileSet &profiles,
                                            plan::MeasuredCommunication &communication,
                                            bool &communicationFound);

/// readPlannerRecords for a tool that goes on without the records (het-plan,
/// het-sim): a database that cannot be read is one warning on `err`
/// ("TOOL: warning: WHY; FALLBACK") and leaves `profiles` as they were and
/// no measured communication.
std::vector<std::string> readPlannerRecordsOrWarn(const std::string &path,
                                                  const plan::ModelDesc &model,
                                                  const plan::Cluster &cluster,
                                                  plan::ProfileSet &profiles,
                                                  plan::MeasuredCommunication &communication,
                                                  bool &communicationFound, const char *tool,
                                                  const char *fallback, std::ostream &err);

} // namespace het::tune

#endif
