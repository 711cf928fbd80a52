//===- RankMetrics.h - what a pipeline rank reports after each step -*- C++ -*-===//
//
// Under het-run (HET_METRICS_FD set: the write end of a pipe het-run reads)
// each rank writes one JSON line per training step: step, step time,
// samples, loss (the rank that prints it), time in collectives and in
// point-to-point exchanges, checkpoint stall and resident memory, with
// the rank's place (group, kind, stage, replica, part). het-run aggregates
// the lines into Prometheus metrics, a status view and a JSON-lines log
// (docs/het-run.md, "Metrics"). A full pipe drops the line instead of
// stalling training.
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_RANKMETRICS_H
#define HET_LIB_RUNTIME_RANKMETRICS_H

#include <cstdint>
#include <map>
#include <string>

namespace het::rt {

struct StepMetrics {
  int64_t step = 0;
  double stepSeconds = 0;
  int64_t samples = 0; // this rank's samples of the step
  bool hasLoss = false;
  double loss = 0;
  double collectiveSeconds = 0, p2pSeconds = 0, checkpointStallSeconds = 0;
  /// The plan's predicted time per iteration (het-plan's, compiled into the
  /// pipeline; 0: none): what "slower than planned" alerts compare with.
  double predictedStepSeconds = 0;
};

class RankMetrics {
public:
  /// Starts reporting if HET_METRICS_FD names an open descriptor; `labels`
  /// describe the rank (rank, group, kind, stage, ...).
  void open(const std::map<std::string, std::string> &labels);
  bool on() const { return fd_ >= 0; }
  void report(const StepMetrics &m);

private:
  int fd_ = -1;
  std::string labels_; // the JSON members, written into every line
};

/// Seconds spent in hetccl by this process's pipeline code, by kind
/// (PipelineComm adds to them; the step loop reads differences).
struct CommSeconds {
  double collective = 0, p2p = 0;
};
CommSeconds &commSeconds();

} // namespace het::rt

#endif
