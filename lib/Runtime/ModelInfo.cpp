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
  if (!(line >> t.name >> type >> rank) ||
      (type != "f32" && type != "i64" && type != "bf16" && type != "f16") || rank < 0)
    return false;
  t.format = type;
  t.shape.resize(rank);
  for (int64_t &s : t.shape)
    if (!(line >> s))
      return false;
  return true;
}
} // namespace

int StageInfo::replicas() const {
  int total = 0;
  for (const ReplicaGroupInfo &g : replicaGroups)
    total += g.count;
  return total;
}

const StageVariant *StageInfo::variant(const std::string &key) const {
  for (const StageVariant &v : variants)
    if (v.key == key)
      return &v;
  return nullptr;
}

bool ModelInfo::isBatched(const std::string &name) const {
  return std::find(batched.begin(), batched.end(), name) != batched.end();
}

const ChannelInfo *ModelInfo::channel(int from, int to, int number) const {
  for (const ChannelInfo &c : channels)
    if (c.from == from && c.to == to && c.channel == number)
      return &c;
  return nullptr;
}

bool ModelInfo::isExpertSharded(const std::string &name) const {
  return std::find(expertSharded.begin(), expertSharded.end(), name) != expertSharded.end();
}

std::pair<int64_t, int64_t> ModelInfo::expertBlock(int stage, int replica) const {
  int64_t first = 0, seen = 0;
  for (const ReplicaGroupInfo &g : stages.at(stage).replicaGroups)
    for (int r = 0; r < g.count; ++r, ++seen) {
      if (seen == replica)
        return {first, g.experts};
      first += g.experts;
    }
  return {first, 0};
}

bool ModelInfo::isShareSharded(const std::string &name) const {
  return std::find(shareSharded.begin(), shareSharded.end(), name) != shareSharded.end();
}

const ShardInfo *ModelInfo::shard(const std::string &name) const {
  for (const ShardInfo &s : shards)
    if (s.name == name)
      return &s;
  return nullptr;
}

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
      ok = (line >> info.version) && (info.version == 1 || info.version == 3);
    } else if (keyword == "pipeline") {
      size_t stages = 0;
      std::string combine;
      ok = (line >> stages >> info.microBatches >> info.globalBatch >> combine) && stages > 0 &&
           stages < 4096 && info.microBatches > 0 && info.globalBatch > 0 &&
           info.globalBatch % info.microBatches == 0 && (combine == "sum" || combine == "avg");
      info.lossSum = combine == "sum";
      if (ok)
        info.stages.resize(stages);
    } else if (keyword == "batched") {
      std::string name;
      ok = static_cast<bool>(line >> name);
      info.batched.push_back(name);
    } else if (keyword == "group") {
      std::pair<std::string, int> group;
      ok = (line >> group.first >> group.second) && group.second > 0;
      info.groups.push_back(group);
    } else if (keyword == "predicted") {
      ok = (line >> info.predictedSeconds) && info.predictedSeconds >= 0;
    } else if (keyword == "plan_key") {
      ok = bool(line >> info.planKey);
    } else if (keyword == "stage" || keyword == "order" || keyword == "function" ||
               keyword == "replicas") {
      size_t j = 0;
      ok = (line >> j) && j < info.stages.size();
      StageInfo *st = ok ? &info.stages[j] : nullptr;
      if (ok && keyword == "stage") {
        size_t groups = 0;
        ok = static_cast<bool>(line >> st->name >> st->layerBegin >> st->layerEnd >>
                               st->tensorParallel >> groups) &&
             st->tensorParallel > 0 && groups > 0;
      } else if (ok && keyword == "replicas") {
        ReplicaGroupInfo g;
        ok = static_cast<bool>(line >> g.group >> g.vendor >> g.arch >> g.library >> g.count >>
                               g.samples >> g.variant >> g.experts) &&
             g.count > 0 && g.samples >= 0 && g.experts >= 0;
        st->replicaGroups.push_back(g);
      } else if (ok && keyword == "order") {
        std::string entry;
        while (line >> entry)
          st->order.push_back(entry);
      } else if (ok) {
        std::string key, phase;
        size_t inputs = 0, outputs = 0;
        ok = static_cast<bool>(line >> key >> phase);
        StageVariant *v = nullptr;
        for (StageVariant &existing : st->variants)
          if (existing.key == key)
            v = &existing;
        if (ok && !v) {
          st->variants.push_back({});
          v = &st->variants.back();
          v->key = key;
        }
        StageFunction *f = !ok                  ? nullptr
                           : phase == "forward"  ? &v->forward
                           : phase == "backward" ? &v->backward
                           : phase == "update"   ? &v->update
                                                 : nullptr;
        ok = f && (line >> f->symbol >> inputs >> outputs >> f->receives);
        current = f;
        section = "function";
      }
    } else if (keyword == "channel") {
      ChannelInfo c;
      std::string direction;
      ok = (line >> c.from >> c.to >> c.channel >> direction >> c.rowsPerSample) &&
           (direction == "forward" || direction == "backward") && c.from >= 0 &&
           c.to >= 0 && size_t(c.from) < info.stages.size() &&
           size_t(c.to) < info.stages.size() && c.rowsPerSample >= -1;
      c.backward = direction == "backward";
      info.channels.push_back(c);
    } else if (keyword == "share_shard") {
      std::string name;
      ok = static_cast<bool>(line >> name);
      info.shareSharded.push_back(name);
    } else if (keyword == "expert_shard") {
      std::string name;
      ok = static_cast<bool>(line >> name);
      info.expertSharded.push_back(name);
    } else if (keyword == "tied") {
      size_t k = 0;
      int stage = 0;
      std::vector<int> members;
      ok = (line >> k) && k == info.tiedGroups.size();
      while (ok && line >> stage) {
        ok = stage >= 0 && size_t(stage) < info.stages.size();
        members.push_back(stage);
      }
      ok = ok && members.size() >= 2;
      info.tiedGroups.push_back(members);
    } else if (keyword == "shard") {
      ShardInfo sh;
      ok = (line >> sh.name >> sh.axis >> sh.parts) && sh.axis >= 0 && sh.parts > 0;
      info.shards.push_back(sh);
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
    if (st.name.empty() || st.replicaGroups.empty()) {
      error = "the pipeline description misses a stage or its replicas";
      return false;
    }
    for (const ReplicaGroupInfo &g : st.replicaGroups) {
      const StageVariant *v = st.variant(g.variant);
      if (!v || v->forward.symbol.empty() || v->backward.symbol.empty() ||
          v->update.symbol.empty()) {
        error = "stage " + st.name + ": no functions for the replicas on " + g.group;
        return false;
      }
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

std::vector<const TensorInfo *> StageVariant::keptOutputs() const {
  std::vector<const TensorInfo *> kept;
  for (const TensorInfo &t : update.outputs)
    kept.push_back(&t);
  for (const TensorInfo &t : forward.outputs)
    if (t.name != "loss" && t.name.rfind("saved.", 0) != 0)
      kept.push_back(&t);
  return kept;
}

} // namespace het::rt
