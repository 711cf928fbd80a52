//===- ModelInfo.cpp - reading het_model_info -------------------------------===//

#include "ModelInfo.h"

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
      int version = 0;
      ok = (line >> version) && version == 1;
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
  return true;
}

} // namespace het::rt
