//===- RankMetrics.cpp - what a pipeline rank reports after each step -----===//
#include "RankMetrics.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace het::rt {

CommSeconds &commSeconds() {
  static CommSeconds seconds;
  return seconds;
}

void RankMetrics::open(const std::map<std::string, std::string> &labels) {
  const char *fd = std::getenv("HET_METRICS_FD");
  if (!fd || !*fd)
    return;
  char *end = nullptr;
  long n = std::strtol(fd, &end, 10);
  if (*end || n < 0 || ::fcntl(static_cast<int>(n), F_GETFD) < 0)
    return; // not ours (a stale variable): report nothing
  fd_ = static_cast<int>(n);
  std::string members = nlohmann::json(labels).dump();
  labels_ = members.substr(1, members.size() - 2); // without the braces
}

void RankMetrics::report(const StepMetrics &m) {
  if (fd_ < 0)
    return;
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  nlohmann::json line = {{"step", m.step},
                         {"step_seconds", m.stepSeconds},
                         {"samples", m.samples},
                         {"collective_seconds", m.collectiveSeconds},
                         {"p2p_seconds", m.p2pSeconds},
                         {"checkpoint_stall_seconds", m.checkpointStallSeconds},
                         {"rss_bytes", resident * ::sysconf(_SC_PAGESIZE)}};
  if (m.hasLoss)
    line["loss"] = m.loss;
  if (m.predictedStepSeconds > 0)
    line["predicted_step_seconds"] = m.predictedStepSeconds;
  std::string text = line.dump();
  text = "{" + labels_ + "," + text.substr(1) + "\n";
  // One write of less than PIPE_BUF bytes: lines of different ranks never
  // interleave. The descriptor is non-blocking: a full pipe drops the line.
  ssize_t written = ::write(fd_, text.data(), text.size());
  (void)written;
}

} // namespace het::rt
