//===- ModelInfo.cpp - reading het_model_info -------------------------------===//

#include "ModelInfo.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace het::rt {

int64_t TensorInfo::count() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

namespace {
bool readTensor(std::istringstream &line, TensorInfo &t) {
  std::string type;
  int64_t rank = 0;
  if (!(line >> t.name >> type >> rank) || (type != "f32" && type != "i64") || rank < 0)
    return false;
  t.isInteger = type == "i64";
  t.shape.resize(rank);
  for (int64_t &s : t.shape)
    if (!(line >> s))
      return false;
  return true;
}
} // namespace

bool parseModelInfo(const char *text, ModelInfo &info, std::string &error) {
  std::istringstream all(text ? text : "");
  std::string raw, section;
  StageFunction *current = nullptr;
  int lineNumber = 0;
  while (std::getline(all, raw)) {
    ++lineNumber;
    if (raw.empty())
      continue;
    std::istringstream line(raw);
    std::string keyword;
    line >> keyword;
    bool ok = true;
    if (keyword == "het-model") {
      ok = (line >> info.version) && (info.version == 1 || info.version == 2);
    } else if (keyword == "pipeline") {
      size_t stages = 0;
      ok = (line >> stages >> info.microBatches) && stages > 0 && stages < 4096 &&
           info.microBatches > 0;
      if (ok)
        info.stages.resize(stages);
    } else if (keyword == "group") {
      std::pair<std::string, int> group;
      ok = (line >> group.first >> group.second) && group.second > 0;
      info.groups.push_back(group);
    } else if (keyword == "predicted") {
      ok = (line >> info.predictedSeconds) && info.predictedSeconds >= 0;
    } else if (keyword == "stage" || keyword == "order" || keyword == "function") {
      size_t j = 0;
      ok = (line >> j) && j < info.stages.size();
      if (ok && keyword == "stage") {
        StageInfo &st = info.stages[j];
        ok = static_cast<bool>(line >> st.name >> st.replicas >> st.group >> st.vendor >>
                               st.arch >> st.library >> st.layerBegin >> st.layerEnd) &&
             st.replicas > 0;
      } else if (ok && keyword == "order") {
        std::string entry;
        while (line >> entry)
          info.stages[j].order.push_back(entry);
      } else if (ok) {
        std::string phase;
        size_t inputs = 0, outputs = 0;
        StageFunction *f = nullptr;
        if (line >> phase)
          f = phase == "forward"    ? &info.stages[j].forward
              : phase == "backward" ? &info.stages[j].backward
              : phase == "update"   ? &info.stages[j].update
                                    : nullptr;
        ok = f && (line >> f->symbol >> inputs >> outputs >> f->receives);
        current = f;
        section = "function";
      }
    } else if (keyword == "in" && section == "function" && current) {
      TensorInfo t;
      ok = readTensor(line, t);
      current->inputs.push_back(t);
    } else if (keyword == "out" && section == "function" && current) {
      TensorInfo t;
      ok = readTensor(line, t);
      current->outputs.push_back(t);
    } else if (keyword == "step") {
      section = "step";
      ok = static_cast<bool>(line >> info.stepName);
    } else if (keyword == "predict") {
      section = "predict";
      ok = static_cast<bool>(line >> info.predictName);
    } else if (keyword == "in" && section == "step") {
      TensorInfo t;
      ok = readTensor(line, t) && (line >> t.role >> t.init);
      if (ok && t.init == "randint")
        ok = static_cast<bool>(line >> t.a);
      if (ok && t.init == "uniform")
        ok = static_cast<bool>(line >> t.a >> t.b);
      info.inputs.push_back(t);
    } else if (keyword == "out" && section == "step") {
      TensorInfo t;
      ok = readTensor(line, t);
      info.outputs.push_back(t);
    } else if (keyword == "in" && section == "predict") {
      std::string name;
      ok = static_cast<bool>(line >> name);
      info.predictInputs.push_back(name);
    } else if (keyword == "out" && section == "predict") {
      ok = readTensor(line, info.logits);
    } else {
      ok = false;
    }
    if (!ok) {
      error = "malformed model description, line " + std::to_string(lineNumber) + ": " + raw;
      return false;
    }
  }
  if (info.stepName.empty() || info.inputs.empty()) {
    error = "the model description names no training step";
    return false;
  }
  for (const StageInfo &st : info.stages) {
    if (st.name.empty() || st.forward.symbol.empty() || st.backward.symbol.empty() ||
        st.update.symbol.empty()) {
      error = "the pipeline description misses a stage or one of its functions";
      return false;
    }
    // Every micro-batch once forward, once backward, forward first.
    std::vector<int> seen(info.microBatches, 0);
    for (const std::string &entry : st.order) {
      char *end = nullptr;
      long micro = entry.size() > 1 ? std::strtol(entry.c_str() + 1, &end, 10) : -1;
      bool backward = entry[0] == 'B';
      if ((entry[0] != 'F' && !backward) || !end || *end || micro < 0 ||
          micro >= info.microBatches || seen[micro] != (backward ? 1 : 0)) {
        error = "stage " + st.name + ": malformed schedule entry '" + entry + "'";
        return false;
      }
      seen[micro] += 1;
    }
    if (std::count(seen.begin(), seen.end(), 2) != info.microBatches) {
      error = "stage " + st.name + ": the schedule does not run every micro-batch";
      return false;
    }
  }
  return true;
}

} // namespace het::rt
