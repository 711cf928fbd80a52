//===- StageProfiles.cpp - stage records and measured communication -------===//

#include "het/Tune/StageProfiles.h"
#include "het/Support/CoreBinding.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

namespace het::tune {

std::string stageModelKey(const plan::ModelDesc &model) {
  std::string name = model.name;
  const std::string suffix = "_train_step";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  // FNV-1a over the parameter tensors' element counts, layer by layer.
  uint64_t digest = 1469598103934665603ull;
  auto mix = [&](uint64_t value) {
    for (int k = 0; k < 8; ++k) {
      digest ^= (value >> (8 * k)) & 0xff;
      digest *= 1099511628211ull;
    }
  };
  for (const plan::LayerDesc &layer : model.layers) {
    mix(0xfeedull); // layer separator
    for (double elements : layer.paramTensors)
      mix(static_cast<uint64_t>(elements));
    if (layer.paramTensors.empty())
      mix(static_cast<uint64_t>(layer.params));
  }
  std::ostringstream key;
  key << "model=" << name << " layers=" << model.layers.size() << " params=" << std::hex
      << std::setw(16) << std::setfill('0') << digest;
  return key.str();
}

static std::string layerWorkload(const std::string &modelKey, const LayerMeasurement &m) {
  return "stage " + modelKey + " layer=" + std::to_string(m.layer) +
         " micro_batch=" + std::to_string(m.microBatch) + " tp=1 concurrent=" +
         std::to_string(m.concurrent);
}

Record stageRecord(const plan::ModelDesc &model, const std::string &device,
                   const std::string &compiler, const LayerMeasurement &m) {
  Record r;
  r.kind = "stage";
  r.workload = layerWorkload(stageModelKey(model), m);
  r.device = device;
  r.host = hostIdentity();
  r.hetVersion = hetVersion();
  r.compiler = compiler;
  r.choice = "measured";
  r.seconds = m.time.fwd + m.time.bwd;
  nlohmann::ordered_json details = nlohmann::ordered_json::parse(m.details.empty() ? "{}" : m.details);
  details["fwd_s"] = m.time.fwd;
  details["bwd_s"] = m.time.bwd;
  details["update_s"] = m.time.update;
  r.details = details.dump();
  r.measuredAt = utcNow();
  return r;
}

size_t loadStageProfiles(const TuningDatabase &db, const plan::ModelDesc &model,
                         const std::string &device, plan::ProfileSet &profiles,
                         std::string &measuredAt) {
  const std::string prefix = "stage " + stageModelKey(model) + " layer=";
  const size_t layers = model.layers.size();
  // (micro-batch, concurrent) -> per-layer times and which are present.
  struct Partial {
    std::vector<plan::LayerTime> times;
    std::vector<bool> present;
    plan::LayerTime call; // the stage call's cost (every layer's record says it)
  };
  std::map<std::pair<int, int>, Partial> tables;
  for (const Record &r : db.find("stage", prefix, device, hostIdentity(), hetVersion())) {
    int layer = -1, microBatch = 0, tp = 0, concurrent = 0;
    if (std::sscanf(r.workload.c_str() + prefix.size(), "%d micro_batch=%d tp=%d concurrent=%d",
                    &layer, &microBatch, &tp, &concurrent) != 4 ||
        layer < 0 || size_t(layer) >= layers || microBatch < 1 || tp != 1)
      continue; // another layout of the key: not ours to read
    nlohmann::json details = nlohmann::json::parse(r.details, nullptr, false);
    if (details.is_discarded() || !details.contains("fwd_s") || !details.contains("bwd_s"))
      throw DatabaseError(db.path() + ": stage record '" + r.workload + "' of " + device +
                          " has no fwd_s/bwd_s in its details");
    Partial &t = tables[{microBatch, concurrent}];
    t.times.resize(layers);
    t.present.resize(layers, false);
    t.times[layer] = {details["fwd_s"].get<double>(), details["bwd_s"].get<double>(),
                      details.value("update_s", 0.0)};
    t.present[layer] = true;
    t.call = {details.value("call_fwd_s", 0.0), details.value("call_bwd_s", 0.0),
              details.value("call_update_s", 0.0)};
    measuredAt = std::max(measuredAt, r.measuredAt);
  }
  // One load per micro-batch size: the lowest, a core of its own (the
  // cost model bounds ranks that share cores by their work).
  std::map<int, const Partial *> chosen;
  for (const auto &[key, t] : tables)
    if (std::count(t.present.begin(), t.present.end(), true) == long(layers))
      chosen.emplace(key.first, &t); // (micro-batch, concurrent) ascending: the first

  for (const auto &[microBatch, t] : chosen) {
    plan::ProfileTable table;
    table.layers = t->times;
    table.call = t->call;
    profiles.add(device, 1, microBatch, std::move(table), db.path());
  }
  return chosen.size();
}

namespace {

/// Seconds at `bytes` from points (bytes, seconds) sorted by bytes: linear
/// between two, the smallest's below them (latency bound), the line through
/// the last two above them.
double interpolate(const std::vector<std::pair<double, double>> &points, double bytes) {
  if (points.empty())
    return -1;
  if (bytes <= points.front().first || points.size() == 1)
    return points.size() == 1 ? points.front().second * std::max(1.0, bytes / points.front().first)
                              : points.front().second;
  for (size_t k = 1; k < points.size(); ++k)
    if (bytes <= points[k].first || k + 1 == points.size()) {
      const auto &[x0, y0] = points[k - 1];
      const auto &[x1, y1] = points[k];
      return std::max(y0, y0 + (bytes - x0) * (y1 - y0) / (x1 - x0));
    }
  return -1;
}

} // namespace

plan::MeasuredCommunication measuredCommunication(const TuningDatabase &db, int hostRanks) {
  auto curves = std::make_shared<std::map<int, std::vector<std::pair<double, double>>>>();
  std::string newest;
  for (int r = 2; r <= 64; ++r) {
    std::string prefix = allReduceWorkloadPrefix(r, 1, "shm");
    for (const Record &rec : db.find("collective", prefix, "cpu", hostIdentity(), hetVersion())) {
      double bytes = std::atof(rec.workload.c_str() + prefix.size());
      nlohmann::json details = nlohmann::json::parse(rec.details, nullptr, false);
      if (bytes <= 0 || details.is_discarded() || !details.contains("candidates") ||
          !details["candidates"].contains("ring"))
        continue;
      (*curves)[r].push_back({bytes, details["candidates"]["ring"]["seconds"].get<double>()});
      newest = std::max(newest, rec.measuredAt);
    }
  }
  for (auto &[r, points] : *curves)
    std::sort(points.begin(), points.end());
  // Messages (het-tune stages) with the job's ranks on this host; else
  // with the most ranks measured.
  auto cold = std::make_shared<std::vector<std::pair<double, double>>>();
  auto warm = std::make_shared<std::vector<std::pair<double, double>>>();
  int messageRanks = 0;
  std::vector<int> order{hostRanks};
  for (int r = 64; r >= 2; --r)
    order.push_back(r);
  for (int r : order) {
    if (r < 2 || messageRanks)
      continue;
    for (auto [after, curve] : {std::pair{"compute", cold}, std::pair{"message", warm}}) {
      std::string prefix = messageWorkloadPrefix(r, after);
      for (const Record &rec : db.find("collective", prefix, "cpu", hostIdentity(), hetVersion())) {
        double bytes = std::atof(rec.workload.c_str() + prefix.size());
        if (bytes > 0 && rec.seconds > 0)
          curve->push_back({bytes, rec.seconds});
        newest = std::max(newest, rec.measuredAt);
      }
    }
    if (!cold->empty() && !warm->empty())
      messageRanks = r;
    else
      cold->clear(), warm->clear();
  }
  std::sort(cold->begin(), cold->end());
  std::sort(warm->begin(), warm->end());

  plan::MeasuredCommunication m;
  if (messageRanks) {
    // A message between stages goes to a rank that waits for it; an
    // all-reduce of n bytes over r ranks is 2(r-1) ring steps of n/r that
    // follow one another.
    m.message = [cold](double bytes) { return interpolate(*cold, bytes); };
    m.allReduce = [warm](double bytes, int r) {
      return 2.0 * (r - 1) * interpolate(*warm, bytes / r);
    };
    m.source = db.path() + " (messages with " + std::to_string(messageRanks) +
               " ranks on this host, measured " + newest + ")";
    return m;
  }
  // Only back-to-back ring all-reduces (het-tune collectives): the curve of
  // the host's rank count (all busy, as in the job), else the largest
  // measured. A ring all-reduce of n bytes over p ranks is 2(p-1) messages
  // of n/p in sequence, so one message of m bytes costs ring_p(p m) /
  // (2(p-1)), and an all-reduce over r ranks 2(r-1) such messages of n/r.
  int p = 0;
  if (curves->count(hostRanks))
    p = hostRanks;
  else if (!curves->empty())
    p = curves->rbegin()->first;
  m.message = [curves, p](double bytes) {
    if (p == 0)
      return -1.0;
    return interpolate(curves->at(p), bytes * p) / (2.0 * (p - 1));
  };
  m.allReduce = [curves, p, message = m.message](double bytes, int r) {
    if (p == 0)
      return -1.0;
    if (r == p)
      return interpolate(curves->at(p), bytes);
    return 2.0 * (r - 1) * message(bytes / r);
  };
  if (p)
    m.source = db.path() + " (het-tune collectives' ring all-reduces on " + std::to_string(p) +
               " ranks, measured " + newest + ")";
  return m;
}

std::vector<std::string> readPlannerRecords(const std::string &path,
                                            const plan::ModelDesc &model,
                                            const plan::Cluster &cluster,
                                            plan::ProfileSet &profiles,
                                            plan::MeasuredCommunication &communication,
                                            bool &communicationFound) {
  std::unique_ptr<TuningDatabase> db = TuningDatabase::open(path, TuningDatabase::Mode::ReadOnly);
  std::vector<std::string> report;
  std::vector<std::string> kinds;
  for (const plan::DeviceGroup &g : cluster.groups)
    if (std::find(kinds.begin(), kinds.end(), g.spec->name) == kinds.end())
      kinds.push_back(g.spec->name);
  for (const std::string &kind : kinds) {
    std::string measuredAt;
    size_t tables = loadStageProfiles(*db, model, kind, profiles, measuredAt);
    if (tables)
      report.push_back("stage profiles of " + kind + ": " + std::to_string(tables) +
                       " micro-batch size" + (tables == 1 ? "" : "s") + " (measured " +
                       measuredAt + ")");
    else
      report.push_back("no stage profiles of " + kind + " for " + stageModelKey(model) +
                       " on this host: the roofline prices it (het-tune stages measures them)");
  }
  int hostRanks = 0;
  for (const plan::DeviceGroup &g : cluster.groups)
    if (g.nodes == 1)
      hostRanks += g.devicesPerNode;
  communication = measuredCommunication(*db, hostRanks);
  // The records are this host's, and so is the cluster they price: its
  // ranks get the CPUs this process may use (het-run binds them within
  // its own affinity, het/Support/CoreBinding.h).
  communication.cores = int(het::support::allowedCpus().size());
  if (communication.cores <= 0)
    communication.cores = int(std::thread::hardware_concurrency());
  // The host's cores bound its ranks' work whenever layers were measured.
  communicationFound = !communication.source.empty() || !profiles.empty();
  if (!communication.source.empty()) {
    report.push_back("communication inside a node: priced by " + communication.source);
  } else {
    report.push_back("no all-reduce records of this host: the cluster's link figures price "
                     "communication (het-tune collectives measures them)");
  }
  return report;
}

std::vector<std::string> readPlannerRecordsOrWarn(const std::string &path,
                                                  const plan::ModelDesc &model,
                                                  const plan::Cluster &cluster,
                                                  plan::ProfileSet &profiles,
                                                  plan::MeasuredCommunication &communication,
                                                  bool &communicationFound, const char *tool,
                                                  const char *fallback, std::ostream &err) {
  plan::ProfileSet before = profiles;
  try {
    return readPlannerRecords(path, model, cluster, profiles, communication, communicationFound);
  } catch (const DatabaseError &e) {
    err << tool << ": warning: " << e.what() << "; " << fallback << "\n";
    profiles = std::move(before);
    communicationFound = false;
    return {};
  }
}

} // namespace het::tune
