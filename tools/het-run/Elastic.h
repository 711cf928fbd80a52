//===- Elastic.h - re-plan a job on the devices left after a loss -*- C++ -*-===//
//
// het-run --elastic: ranks SIGKILLed by someone else than het-run have
// lost their devices. With spares left, the same plan restarts on standby
// devices; otherwise the cluster spec loses those devices, het-compile
// plans and builds the model again for the survivors (from the
// <program>.build.json it wrote), and the job restarts under the new plan
// from the newest checkpoint, resharded (lib/Runtime/Resharding.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef HET_RUN_ELASTIC_H
#define HET_RUN_ELASTIC_H

#include "Supervisor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hetrun {

/// How het-compile built a pipeline executable (<program>.build.json).
struct BuildRecord {
  std::string file, compiler, directory, model, cluster, plan;
  int64_t globalBatch = 0;
  std::vector<std::string> options;
};

/// Reads <program>.build.json; throws std::runtime_error naming the file
/// and what is wrong.
BuildRecord readBuildRecord(const std::string &program);

/// The ranks (indices into r.fates) whose process was SIGKILLed by someone
/// else than het-run (the kernel's OOM killer, a node going away, fault
/// injection): their devices are lost. A rank that crashed (SIGSEGV,
/// SIGABRT) is a program error, not a lost device.
std::vector<int> lostRanks(const JobResult &r);

/// Compiles the model again for `clusterFile` with --plan auto and the
/// record's global batch into `output` (het-compile's output in
/// <output>.compile.log). Returns the plan's summary lines (stages,
/// predicted iteration time); throws std::runtime_error with the log's
/// tail when het-compile fails.
std::vector<std::string> recompile(const BuildRecord &build, const std::string &clusterFile,
                                   const std::string &output);

/// The executables of one elastic job by the devices they run on: the
/// program it was started with for the whole cluster, and one compiled per
/// re-plan. A set of devices seen before reuses its executable (devices
/// re-admitted after a re-plan bring the job back to the plan it had).
class ElasticPlans {
public:
  /// `program`: an absolute path (het-compile runs in the model's directory).
  ElasticPlans(BuildRecord build, const std::string &clusterFile, const std::string &program);

  struct Choice {
    std::string program, clusterFile;
    bool compiled = false;            // else an executable built before
    std::string key;                  // what the devices are
    std::vector<std::string> summary; // the new plan's lines (when compiled)
    double seconds = 0;               // planning and compiling
  };
  /// The executable for the job's cluster without `lost` devices (by the
  /// groups of the cluster it started with): one built before, or a
  /// cluster spec written for compile(). Throws std::runtime_error when
  /// the spec cannot be made.
  Choice forLost(const std::map<std::string, int> &lost);
  /// Plans and builds `c` (from forLost, `compiled` set); throws
  /// std::runtime_error with het-compile's log when it fails.
  void compile(Choice &c);
  const nlohmann::json &originalSpec() const { return original_; }
  const BuildRecord &build() const { return build_; }

private:
  BuildRecord build_;
  nlohmann::json original_;
  std::string program_;
  int compiled_ = 0;
  std::map<std::string, Choice> byDevices_; // the spec's nodes and network -> executable
};

} // namespace hetrun

#endif
