//===- MeasuredSplit.cpp - a run's measured split, stage by stage --------===//
#include "het/Plan/MeasuredSplit.h"
#include "het/Plan/Error.h"

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <sstream>

namespace het::plan {

std::vector<MeasuredStageSplit> measuredSplitFromLog(const std::string &text, size_t stages,
                                                     const std::string &file) {
  static const std::regex stageLine(R"(^\[rank (\d+)\] rank \d+: stage s(\d+) )");
  static const std::regex splitLine(
      R"(^\[rank (\d+)\] time per step ([0-9.]+) ms: kernels ([0-9.]+) ms, outside kernels )"
      R"([0-9.]+ ms \([0-9]+%: messages ([0-9.]+), collectives ([0-9.]+), runtime (-?[0-9.]+)\))");
  std::map<int, size_t> stageOf;
  std::map<int, MeasuredStageSplit> byRank;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, stageLine)) {
      stageOf[std::stoi(m[1])] = std::stoul(m[2]);
    } else if (std::regex_search(line, m, splitLine)) {
      MeasuredStageSplit s;
      s.ranks = 1;
      s.step = std::stod(m[2]) / 1e3;
      s.kernels = std::stod(m[3]) / 1e3;
      s.messages = std::stod(m[4]) / 1e3;
      s.collectives = std::stod(m[5]) / 1e3;
      s.runtime = std::stod(m[6]) / 1e3;
      byRank[std::stoi(m[1])] = s; // the last attempt's, when het-run restarted
    }
  }
  std::vector<MeasuredStageSplit> split(stages);
  for (const auto &[rank, s] : byRank) {
    auto it = stageOf.find(rank);
    if (it == stageOf.end() || it->second >= stages)
      continue;
    MeasuredStageSplit &t = split[it->second];
    ++t.ranks;
    t.step += s.step;
    t.kernels += s.kernels;
    t.messages += s.messages;
    t.collectives += s.collectives;
    t.runtime += s.runtime;
  }
  bool any = false;
  for (MeasuredStageSplit &t : split) {
    if (t.ranks == 0)
      continue;
    any = true;
    for (double *v : {&t.step, &t.kernels, &t.messages, &t.collectives, &t.runtime})
      *v /= t.ranks;
  }
  if (!any)
    fail(file, "",
         "no rank's measured split (\"[rank k] time per step ...\" beside \"[rank k] rank k: "
         "stage sJ ...\"): give what het-run printed for a pipeline of this plan");
  return split;
}

nlohmann::json measuredSplitToJson(const std::vector<MeasuredStageSplit> &split) {
  nlohmann::json stages = nlohmann::json::array();
  for (const MeasuredStageSplit &s : split)
    stages.push_back({{"ranks", s.ranks},
                      {"step_s", s.step},
                      {"kernels_s", s.kernels},
                      {"messages_s", s.messages},
                      {"collectives_s", s.collectives},
                      {"runtime_s", s.runtime}});
  return stages;
}

} // namespace het::plan
